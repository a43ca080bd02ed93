import { XMLParser } from 'fast-xml-parser';
import { counted, type RequestError } from '../../core/errors.js';
import type { Json } from '../kit/shape.js';

// The XML of WeChat and WeCom callbacks (`<xml><ToUserName><![CDATA[...]]></ToUserName>...</xml>`):
// flat, no attributes, strings in CDATA. That shape is read by `readFlat`; anything else by
// fast-xml-parser after `scanXml`, entities never expanded.

/** How much XML one body may hold: nesting depth and elements (the JSON limits of `server`). */
export interface XmlLimits {
  maxDepth: number;
  maxKeys: number;
}

// Every value a string: MsgId is a 64-bit integer, which a number would round.
const parser = new XMLParser({
  processEntities: false,
  htmlEntities: false,
  ignoreAttributes: true,
  ignoreDeclaration: true,
  ignorePiTags: true,
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: true,
});

const tagName = /^[^\s/>]+/;

/**
 * Check the document before the parser sees it: no DOCTYPE or other `<!` declaration (so no
 * entity is ever defined, let alone expanded: billion laughs, external entities), every tag
 * closed by its own name, nesting and element count within the limits. One pass over the text;
 * CDATA, comments and processing instructions are stepped over whole.
 */
export function scanXml(text: string, limits: XmlLimits, fail: (problem: string) => RequestError): void {
  const open: string[] = [];
  let elements = 0;
  let at = text.indexOf('<');
  if (
    at === -1 ||
    text
      .slice(0, at)
      .replace(/^\uFEFF/, '')
      .trim() !== ''
  )
    throw fail('the body is not an XML document (it must start with "<")');
  while (at !== -1) {
    let end: number;
    if (text.startsWith('<![CDATA[', at)) {
      end = text.indexOf(']]>', at + 9);
      if (end === -1) throw fail('a CDATA section is not closed');
      at = text.indexOf('<', end + 3);
      continue;
    }
    if (text.startsWith('<!--', at)) {
      end = text.indexOf('-->', at + 4);
      if (end === -1) throw fail('a comment is not closed');
      at = text.indexOf('<', end + 3);
      continue;
    }
    const next = text.charCodeAt(at + 1);
    if (next === 0x21 /* ! */)
      throw fail('DOCTYPE and entity declarations are refused (WeChat and WeCom never send them)');
    if (next === 0x3f /* ? */) {
      end = text.indexOf('?>', at + 2);
      if (end === -1) throw fail('an XML declaration is not closed');
      at = text.indexOf('<', end + 2);
      continue;
    }
    end = text.indexOf('>', at + 1);
    if (end === -1) throw fail('a tag is not closed');
    if (next === 0x2f /* / */) {
      const name = text.slice(at + 2, end).trim();
      const expected = open.pop();
      if (name !== expected)
        throw fail(expected === undefined ? `</${name}> closes nothing` : `</${name}> closes <${expected}>`);
    } else {
      const selfClosing = text.charCodeAt(end - 1) === 0x2f;
      const name = tagName.exec(text.slice(at + 1, selfClosing ? end - 1 : end))?.[0];
      if (!name) throw fail('a tag has no name');
      if (++elements > limits.maxKeys) throw fail(`more than ${counted(limits.maxKeys, 'element')} (server.maxKeys)`);
      if (!selfClosing) {
        if (open.length === 0 && elements > 1) throw fail('more than one root element');
        open.push(name);
        if (open.length > limits.maxDepth) throw fail(`XML nested deeper than ${limits.maxDepth} (server.maxDepth)`);
      }
    }
    at = text.indexOf('<', end + 1);
  }
  if (open.length > 0) throw fail(`<${open[open.length - 1]}> is not closed`);
}

/**
 * Parse a callback body, `<xml>...</xml>`, into the object of its root's children, every value a
 * string (or, for a repeated element, an array). Anything else is the adapter's 400.
 */
export function parseXml(raw: Buffer | string, limits: XmlLimits, fail: (problem: string) => RequestError): Json {
  const text = typeof raw === 'string' ? raw : raw.toString('utf8');
  return readFlat(text, limits) ?? parseWithLibrary(text, limits, fail);
}

/** `parseXml` for any document: `scanXml`, then fast-xml-parser. */
export function parseWithLibrary(text: string, limits: XmlLimits, fail: (problem: string) => RequestError): Json {
  scanXml(text, limits, fail);
  let document: unknown;
  try {
    document = parser.parse(text);
  } catch (error) {
    // The parser refuses element names such as __proto__ and constructor itself.
    throw fail(`the XML does not parse: ${(error as Error).message}`);
  }
  const root = (document as Json)?.xml;
  if (typeof root === 'object' && root !== null && !Array.isArray(root)) return root as Json;
  if (root === '') return {};
  throw fail('the root element must be <xml> holding the message fields');
}

const FIELD_NAME = /^[A-Za-z][A-Za-z0-9_]*$/;
const SPACE = /^\s*$/;
/**
 * What `name in Object.prototype` tells (`constructor`, `__proto__`, `hasOwnProperty`, ...), for a
 * name the library treats apart: `in` with a new string each time cost ~0.4 µs of a message.
 */
const PROTOTYPE_NAMES = new Set(Object.getOwnPropertyNames(Object.prototype));

/**
 * The documented callback shape read without the library: `<xml>` holding only
 * `<Name><![CDATA[value]]></Name>` or `<Name>value</Name>` children, each name once, values
 * that are CDATA or text with no `<`, `&` or surrounding white space, only white space between
 * the children. That is every message WeChat and WeCom send, and parsing it with fast-xml-parser
 * cost ~14 µs of the ~40 of a delivery. Anything else (a declaration, comment, PI, DOCTYPE,
 * attribute, nesting, repeated element, entity, a name the library renames such as
 * `hasOwnProperty`, a value it would trim) returns undefined and goes through `scanXml` and the
 * library as before, so what this accepts is exactly what the library returns for it (the tests
 * check both paths give equal results), and it refuses nothing on its own: no parser differential.
 */
export function readFlat(text: string, limits: XmlLimits): Record<string, string> | undefined {
  if (!text.startsWith('<xml>') || limits.maxDepth < 2) return undefined;
  const fields: Record<string, string> = {};
  let count = 1;
  let at = 5;
  for (;;) {
    const open = text.indexOf('<', at);
    // Only white space between the children; WeChat and WeCom put none, so the slice is rarely made.
    if (open === -1 || (open > at && !SPACE.test(text.slice(at, open)))) return undefined;
    if (text.startsWith('</xml>', open)) {
      return open + 6 === text.length || SPACE.test(text.slice(open + 6)) ? fields : undefined;
    }
    const close = text.indexOf('>', open + 1);
    if (close === -1) return undefined;
    const name = text.slice(open + 1, close);
    if (!FIELD_NAME.test(name) || Object.hasOwn(fields, name) || PROTOTYPE_NAMES.has(name) || ++count > limits.maxKeys)
      return undefined;
    let value: string;
    let end: number;
    if (text.startsWith('<![CDATA[', close + 1)) {
      const cdataEnd = text.indexOf(']]>', close + 10);
      if (cdataEnd === -1) return undefined;
      value = text.slice(close + 10, cdataEnd);
      end = cdataEnd + 3;
    } else {
      end = text.indexOf('<', close + 1);
      if (end === -1) return undefined;
      value = text.slice(close + 1, end);
      if (value.includes('&') || value.includes('>') || value.trim() !== value) return undefined;
    }
    if (!closesAt(text, end, name)) return undefined;
    fields[name] = value;
    at = end + name.length + 3;
  }
}

/** Whether `</name>` starts at `at`, checked in place rather than built as a string per element. */
function closesAt(text: string, at: number, name: string): boolean {
  return (
    text.charCodeAt(at) === 0x3c /* < */ &&
    text.charCodeAt(at + 1) === 0x2f /* / */ &&
    text.startsWith(name, at + 2) &&
    text.charCodeAt(at + 2 + name.length) === 0x3e /* > */
  );
}

/**
 * The ciphertext of an envelope (`<xml><ToUserName/>[<AgentID/>]<Encrypt/></xml>`): read as the
 * flat shape when it is one (one pass, ~0.3 µs), else checked by `scanXml` and found by
 * `envelopeField` as before. Either way the signature is checked over exactly this string.
 */
export function envelopeEncrypt(
  text: string,
  limits: XmlLimits,
  fail: (problem: string) => RequestError,
): string | undefined {
  const flat = readFlat(text, limits);
  if (flat) return flat.Encrypt?.trim();
  scanXml(text, limits, fail);
  return envelopeField(text, 'Encrypt');
}

/** The text of `<name>` in a small trusted-shape envelope (`<Encrypt>`), found without a parser; base64 never holds `<` or `]`. */
export function envelopeField(text: string, name: string): string | undefined {
  const start = text.indexOf(`<${name}>`);
  if (start === -1) return undefined;
  const end = text.indexOf(`</${name}>`, start);
  if (end === -1) return undefined;
  let value = text.slice(start + name.length + 2, end).trim();
  if (value.startsWith('<![CDATA[') && value.endsWith(']]>')) value = value.slice(9, -3).trim();
  return value;
}

/** The Content-Types WeChat and WeCom post their XML with (`text/xml`, `application/xml`, any parameters). */
export const XML_BODIES = {
  accepts: (contentType: string | undefined) =>
    contentType !== undefined && /^\s*(?:text|application)\/xml\s*(?:;|$)/i.test(contentType),
  names: 'text/xml or application/xml',
};
