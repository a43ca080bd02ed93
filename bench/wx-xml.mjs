// CPU per document of reading WeChat and WeCom callback XML, in-process: the strict flat-shape
// scanner the adapters use (`parseXml`) against fast-xml-parser alone (`parseWithLibrary`: the
// same DOCTYPE and limits scan, then the library), on the two documents a safe-mode delivery
// carries: the `<Encrypt>` envelope and the decrypted text message. Both must agree on each.
// Usage: node bench/wx-xml.mjs [documents=50000] [rounds=7]
import { median } from './servers.mjs';

const count = Number(process.argv[2] ?? 50_000);
const rounds = Number(process.argv[3] ?? 7);
const { parseXml, parseWithLibrary } = await import('../dist/adapters/wx/xml.js');

const limits = { maxDepth: 64, maxKeys: 10_000 };
const fail = (problem) => new Error(problem);
const message = (i) =>
  `<xml><ToUserName><![CDATA[gh_3f5e2a1b9c7d]]></ToUserName><FromUserName><![CDATA[oRd5a6kQd3Xh8Zy1Lm2NpQ7s${i % 1000}]]></FromUserName><CreateTime>1765000000</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[hello ${i}]]></Content><MsgId>${6054768590064713728n + BigInt(i)}</MsgId></xml>`;
const envelope = (i) =>
  `<xml><ToUserName><![CDATA[gh_3f5e2a1b9c7d]]></ToUserName><Encrypt><![CDATA[${Buffer.alloc(320, i % 251).toString('base64')}]]></Encrypt></xml>`;
const documents = {
  'text message': Array.from({ length: count }, (_, i) => message(i)),
  'Encrypt envelope': Array.from({ length: count }, (_, i) => envelope(i)),
};
const readers = {
  'flat scanner (parseXml)': (text) => parseXml(text, limits, fail),
  'fast-xml-parser (parseWithLibrary)': (text) => parseWithLibrary(text, limits, fail),
};

for (const texts of Object.values(documents)) {
  const [a, b] = Object.values(readers).map((read) => JSON.stringify(read(texts[0])));
  if (a !== b) throw new Error(`the readers disagree:\n${a}\n${b}`);
}

const times = new Map();
for (let round = 0; round < rounds; round++) {
  for (const [docName, texts] of Object.entries(documents)) {
    for (const [readerName, read] of Object.entries(readers)) {
      const started = process.hrtime.bigint();
      for (const text of texts) read(text);
      const us = Number(process.hrtime.bigint() - started) / 1000 / texts.length;
      const key = `${docName}|${readerName}`;
      times.set(key, [...(times.get(key) ?? []), us]);
    }
  }
}

console.log(`| document | reader | µs per document (median of ${rounds} rounds, range) |\n|---|---|---:|`);
for (const [key, values] of times) {
  const [docName, readerName] = key.split('|');
  console.log(
    `| ${docName} | ${readerName} | ${median(values).toFixed(2)} (${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)}) |`,
  );
}
