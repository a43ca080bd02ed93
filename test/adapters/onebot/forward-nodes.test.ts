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

  it('reads an answer nested 2,000 forwards deep inline down to 10 levels, the most forwards.maxDepth allows', () => {
    let content: unknown[] = [{ sender: { user_id: 1 }, time: 1, message: [{ type: 'text', data: { text: 'leaf' } }] }];
    for (let level = 0; level < 2000; level++) {
      const message = [
        { type: 'text', data: { text: `level ${level}` } },
        { type: 'forward', data: { id: 'same', content } },
      ];
      content = [{ sender: { user_id: 1 }, time: 1, message }];
    }
    let node = forwardNodes({ status: 'ok', retcode: 0, data: { messages: content } })[0];
    let depth = 0;
    while (node) {
      depth++;
      expect(node.content).toBe(`level ${2000 - depth} [forwarded messages]`);
      expect(node.nested?.id).toBe('same');
      node = node.nested?.nodes?.[0];
    }
    expect(depth).toBe(10);
  });

  it('reads at most 1,001 nodes of an answer of 100,000, one past the most forwards.maxNodes allows', () => {
    const messages = Array.from({ length: 100_000 }, (_, i) => ({ type: 'node', data: { user_id: i, content: 'x' } }));
    expect(forwardNodes({ status: 'ok', retcode: 0, data: { messages } })).toHaveLength(1001);
  });

  it('counts nested nodes among the 1,001', () => {
    const inner = Array.from({ length: 900 }, () => ({ sender: { user_id: 2 }, message: 'in' }));
    const messages = Array.from({ length: 300 }, () => ({
      sender: { user_id: 1 },
      message: [{ type: 'forward', data: { id: 'n', content: inner } }],
    }));
    const nodes = forwardNodes({ status: 'ok', retcode: 0, data: { messages } });
    expect(nodes).toHaveLength(2);
    expect(nodes[0]!.nested?.nodes).toHaveLength(900);
    expect(nodes[1]!.nested?.nodes).toHaveLength(99);
  });

  it('reads fields of the wrong type and __proto__ keys as absent, never as the prototype', () => {
    const answer = JSON.parse(
      '{"status":"ok","retcode":0,"data":{"messages":[{"__proto__":{"polluted":1},"sender":{"user_id":{"x":1},' +
        '"nickname":["n"],"__proto__":{"card":"C"}},"time":"soon","message":[{"type":"text","data":{"text":{"a":1},' +
        '"__proto__":{"text":"T"}}},{"type":{"t":1},"data":{}},{"type":"forward","data":{"id":7,"content":"no"}}]}]}}',
    ) as unknown;
    const [node] = forwardNodes(answer);
    expect(node).toEqual({
      sender: { id: '' },
      content: '{"a":1} [forwarded messages]',
      timestamp: 0,
      media: [],
      nested: { id: '7' },
    });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
