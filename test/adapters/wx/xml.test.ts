import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  envelopeEncrypt,
  envelopeField,
  parseWithLibrary,
  parseXml,
  readFlat,
  scanXml,
} from '../../../src/adapters/wx/xml.js';
import { RequestError } from '../../../src/core/errors.js';
import { HOSTILE_XML } from '../wx-kit.js';

const LIMITS = { maxDepth: 32, maxKeys: 1000 };
const fail = (problem: string) => new RequestError('bad_shape', 400, problem);
const FIXTURES = ['wechat', 'wecom'].flatMap((dir) => {
  const folder = new URL(`../../fixtures/${dir}/`, import.meta.url);
  return readdirSync(folder)
    .filter((name) => name.endsWith('.xml'))
    .map((name) => [`${dir}/${name}`, readFileSync(new URL(name, folder), 'utf8')] as const);
});

/** What the library path makes of a document: its object or its error message. */
function outcome(read: () => unknown): unknown {
  try {
    return read();
  } catch (error) {
    return `error: ${(error as Error).message}`;
  }
}

describe('readFlat: the documented flat shape without the library, and nothing else', () => {
  it.each(FIXTURES)('%s reads the same on both paths', (_, xml) => {
    const flat = readFlat(xml, LIMITS);
    expect(flat).toBeDefined();
    expect(flat).toEqual(parseWithLibrary(xml, LIMITS, fail));
  });

  it.each([
    '<xml><A><![CDATA[ spaced ]]></A><B>12</B><C></C><D><![CDATA[]]></D></xml>',
    '<xml>\n  <A><![CDATA[a<b>&amp;]]></A>\n  <B>1e3</B>\n</xml>\n',
    '<xml></xml>',
  ])("accepts %j with the library's result", (xml) => {
    expect(readFlat(xml, LIMITS)).toEqual(parseWithLibrary(xml, LIMITS, fail));
  });

  const hostile = [
    ...HOSTILE_XML,
    '<!DOCTYPE xml><xml><A>1</A></xml>',
    '<xml><!DOCTYPE x><A>1</A></xml>',
    '<xml><A>&lt;b&gt;</A></xml>',
    '<xml><A>&#x41;</A></xml>',
    '<xml><A><![CDATA[x]]>y</A></xml>',
    '<xml><A><![CDATA[a]]>]]></A></xml>',
    '<xml><A><![CDATA[<B>1</B>]]></A><A>2</A></xml>',
    '<xml><A><![CDATA[x</A></xml>',
    '<xml><A>1</A>',
    '<xml><A>1</xml>',
    '<xml><A>1</B></xml>',
    '<xml><A>1</A><A>2</A></xml>',
    '<xml><!-- c --><A>1</A></xml>',
    '<xml><A>1<!-- c --></A></xml>',
    '<xml><?pi x?><A>1</A></xml>',
    '<?xml version="1.0"?><xml><A>1</A></xml>',
    '\uFEFF<xml><A>1</A></xml>',
    ` <xml><A>1</A></xml>`,
    `<xml><A ${Array.from({ length: 500 }, (_, i) => `a${i}="x"`).join(' ')}>1</A></xml>`,
    '<xml a="1"><A>1</A></xml>',
    '<xml><A/></xml>',
    '<xml><A><B><C>1</C></B></A></xml>',
    `<xml>${'<A>'.repeat(100)}1${'</A>'.repeat(100)}</xml>`,
    '<xml><A> 1 </A></xml>',
    '<xml><A>a>b</A></xml>',
    '<xml><hasOwnProperty>1</hasOwnProperty></xml>',
    '<xml><constructor>1</constructor></xml>',
    '<xml><__proto__>1</__proto__></xml>',
    '<xml><A>1</A>text</xml>',
    '<xml><A>1</A></xml><xml><B>2</B></xml>',
    '<xml><A>1</A></xml>trailing',
    '<XML><A>1</A></XML>',
    '<xml><A:b>1</A:b></xml>',
  ];
  it.each(hostile)('hands %j to the library, which decides as before', (xml) => {
    expect(readFlat(xml, LIMITS)).toBeUndefined();
    expect(outcome(() => parseXml(xml, LIMITS, fail))).toEqual(outcome(() => parseWithLibrary(xml, LIMITS, fail)));
  });

  it('keeps the limits: too many elements or too shallow a depth go to the library and are refused', () => {
    const many = `<xml>${Array.from({ length: 20 }, (_, i) => `<F${i}>1</F${i}>`).join('')}</xml>`;
    expect(readFlat(many, { maxDepth: 32, maxKeys: 10 })).toBeUndefined();
    expect(() => parseXml(many, { maxDepth: 32, maxKeys: 10 }, fail)).toThrow(/more than 10 elements/);
    expect(readFlat('<xml><A>1</A></xml>', { maxDepth: 1, maxKeys: 10 })).toBeUndefined();
    expect(() => parseXml('<xml><A>1</A></xml>', { maxDepth: 1, maxKeys: 10 }, fail)).toThrow(/deeper than 1/);
  });
});

describe('envelopeEncrypt', () => {
  const ENVELOPE = { maxDepth: 4, maxKeys: 64 };
  it.each([
    ['<xml><ToUserName><![CDATA[gh]]></ToUserName><Encrypt><![CDATA[QUJD]]></Encrypt></xml>', 'QUJD'],
    ['<xml><ToUserName><![CDATA[gh]]></ToUserName><Encrypt><![CDATA[ QUJD ]]></Encrypt></xml>', 'QUJD'],
    ['<xml><ToUserName>gh</ToUserName><AgentID>1</AgentID><Encrypt>QUJD</Encrypt></xml>', 'QUJD'],
    ['<?xml version="1.0"?>\n<xml><Encrypt><![CDATA[QUJD]]></Encrypt></xml>', 'QUJD'],
    ['<xml><ToUserName>gh</ToUserName></xml>', undefined],
  ])('%j: %j, as envelopeField reads it', (xml, encrypt) => {
    expect(envelopeEncrypt(xml, ENVELOPE, fail)).toBe(encrypt);
    scanXml(xml, ENVELOPE, fail);
    expect(envelopeField(xml, 'Encrypt')).toBe(encrypt);
  });

  it.each(HOSTILE_XML)('refuses %j as before', (xml) => {
    expect(() => envelopeEncrypt(xml, ENVELOPE, fail)).toThrow(/DOCTYPE/);
  });
});
