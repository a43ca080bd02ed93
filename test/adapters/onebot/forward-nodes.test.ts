import { describe, expect, it } from 'vitest';
import { forwardNodes } from '../../../src/adapters/onebot/forward.js';

describe('the nodes of a get_forward_msg answer', () => {
  it('reads go-cqhttp node segments with CQ-code content, a nested forward named by its id', () => {
    const answer = {
      status: 'ok',
      retcode: 0,
      data: {
        messages: [
          {
            type: 'node',
            data: {
              user_id: 1,
              nickname: 'Ana',
              time: 100,
              content: 'hi [CQ:image,file=a.png,url=https://192.0.2.1/a.png]',
            },
          },
          { type: 'node', data: { user_id: '2', nickname: 'Bo', time: 101, content: '[CQ:forward,id=inner]' } },
        ],
      },
    };
    expect(forwardNodes(answer)).toEqual([
      {
        sender: { id: '1', name: 'Ana' },
        content: 'hi',
        timestamp: 100,
        media: [{ type: 'image', ref: 'https://192.0.2.1/a.png' }],
      },
      {
        sender: { id: '2', name: 'Bo' },
        content: '[forwarded messages]',
        timestamp: 101,
        media: [],
        nested: { id: 'inner' },
      },
    ]);
  });

  it('reads NapCat messages whose nested forward carries its messages inline', () => {
    const inner = {
      sender: { user_id: 3, nickname: 'Cy' },
      time: 90,
      message: [{ type: 'text', data: { text: 'deep' } }],
    };
    const answer = {
      status: 'ok',
      retcode: 0,
      data: {
        messages: [
          {
            sender: { user_id: 2, nickname: 'Bo', card: 'Bobby' },
            time: 101,
            message: [{ type: 'forward', data: { id: 'inner', content: [inner] } }],
          },
        ],
      },
    };
    expect(forwardNodes(answer)[0]!.nested).toEqual({
      id: 'inner',
      nodes: [{ sender: { id: '3', name: 'Cy' }, content: 'deep', timestamp: 90, media: [] }],
    });
    expect(forwardNodes(answer)[0]!.sender).toEqual({ id: '2', name: 'Bobby' });
  });

  it('throws on a refusal or an answer without messages, saying what the bot said', () => {
    expect(() => forwardNodes({ status: 'failed', retcode: 1404, message: 'not found' })).toThrow(
      'get_forward_msg answered retcode 1404: not found',
    );
    expect(() => forwardNodes({ status: 'ok', retcode: 0, data: {} })).toThrow(/without data\.messages/);
  });
});
