import { createCipheriv } from 'node:crypto';
import { deflateSync } from 'node:zlib';

/** A KOOK `encrypt` value as the docs build it: base64(IV + base64(AES-256-CBC(plain))), key NUL-padded to 32 bytes. */
export function kookEncrypt(encryptKey: string, plain: string, iv = '0123456789abcdef'): string {
  const key = Buffer.alloc(32);
  Buffer.from(encryptKey, 'utf8').copy(key, 0, 0, 32);
  const cipher = createCipheriv('aes-256-cbc', key, Buffer.from(iv, 'latin1'));
  const sealed = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]).toString('base64');
  return Buffer.from(iv + sealed, 'latin1').toString('base64');
}

/** A webhook body as KOOK posts it: the event, encrypted with `encryptKey` when given, deflated when `compress`. */
export function kookBody(event: unknown, options: { encryptKey?: string; compress?: boolean } = {}): Buffer {
  const json = JSON.stringify(event);
  const text = options.encryptKey ? JSON.stringify({ encrypt: kookEncrypt(options.encryptKey, json) }) : json;
  return options.compress === false ? Buffer.from(text) : deflateSync(Buffer.from(text));
}
