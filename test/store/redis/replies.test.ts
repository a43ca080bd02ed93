import { describe, expect, it } from 'vitest';
import {
  admitReply,
  claimDueReply,
  commitReply,
  commitTurnReply,
  conversationReply,
  entriesReply,
  ReplyShapeError,
  trimReply,
  turnDoneReply,
} from '../../../src/store/redis/replies.js';

describe('the decoders of script replies', () => {
  it('read each shape a script answers with into typed values', () => {
    expect(
      admitReply([
        ['accepted', '7', 1500, []],
        ['claimed', 0],
        ['correlated', 1, ['message 1 0 60000', '{}']],
      ]),
    ).toEqual([
      { verdict: 'accepted', partId: '7', deadline: 1500, group: [] },
      { verdict: 'claimed', claim: 0 },
      { verdict: 'correlated', retry: true, group: ['message 1 0 60000', '{}'] },
    ]);
    expect(claimDueReply([['s/a', 's', 3, 1100, 'window', ['0 0 p1\n{}']]])).toEqual([
      ['s/a', 's', 3, 1100, 'window', ['0 0 p1\n{}']],
    ]);
    expect(commitReply(null)).toBeNull();
    expect(commitReply('held')).toBe('held');
    expect(commitReply([4, '1200'])).toEqual([4, 1200]);
    expect(commitTurnReply(['held', 'o1', 9000, 2])).toEqual({ held: true, by: 'o1', until: 9000, count: 2 });
    expect(commitTurnReply(['emitted', 5, 1300, '', ''])).toEqual({ held: false, seq: 5, at: 1300 });
    expect(commitTurnReply(['emitted', 5, 1300, 'followsUp', 'o1'])).toEqual({
      held: false,
      seq: 5,
      at: 1300,
      link: { field: 'followsUp', id: 'o1' },
    });
    expect(entriesReply([['3-0', ['i', 'o3'], null]])).toEqual([['3-0', ['i', 'o3'], null]]);
    expect(conversationReply([null, 0])).toEqual([null, 0, []]);
    expect(conversationReply(['{"group":"mention"}', 2, '7 100\n{}'])).toEqual([
      '{"group":"mention"}',
      2,
      ['7 100\n{}'],
    ]);
    expect(trimReply([2, '(5-0'])).toEqual([2, '(5-0']);
    expect(turnDoneReply(['unknown'])).toEqual({ result: 'unknown' });
    expect(turnDoneReply(['closed', 's', 1])).toEqual({ result: 'closed', sessionKey: 's', held: 1 });
  });

  it('name the script and the place in its reply that is not of the shape expected', () => {
    expect(() => claimDueReply([['s/a', 's', '3', 1100, 'window', []]])).toThrow(ReplyShapeError);
    expect(() => claimDueReply([['s/a', 's', '3', 1100, 'window', []]])).toThrow(
      'Unexpected reply from claim-due.lua: reply[0][2] is "3", not an integer',
    );
    expect(() => admitReply([['taken', 0]])).toThrow(
      `Unexpected reply from admit.lua: reply[0][0] is "taken", not 'accepted', 'claimed' or 'correlated'`,
    );
    expect(() => commitTurnReply(['emitted', 5, 1300, 'later', 'o1'])).toThrow(
      /commit-turn\.lua: reply\[3\] is "later"/,
    );
    expect(() => entriesReply('OK')).toThrow('Unexpected reply from read.lua: reply is "OK", not an array');
    expect(() => trimReply([2])).toThrow('Unexpected reply from trim.lua: reply[1] is undefined, not a string');
  });
});
