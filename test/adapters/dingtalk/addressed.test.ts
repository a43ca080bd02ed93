import { describe, expect, it } from 'vitest';
import { fixture } from '../../fixtures/index.js';
import { channelOf, normalizedBody, normalizedFixture } from '../normalized.js';

describe('DingTalk: what a message says about mentions of the bot', () => {
  it("puts the bot's id (its robotCode, as botId) in mentions when isInAtList says it was @'d, the robot's own atUsers entry once", () => {
    const [event] = normalizedFixture(channelOf('dingtalk'), 'dingtalk', 'text-group-at.json').events;
    expect(event!.botId).toBe('dingxq2ftr6iwcu6zzur');
    expect(event!.mentions).toEqual(['dingxq2ftr6iwcu6zzur', '0251383547']);
  });

  it('leaves the bot out of mentions when isInAtList is false', () => {
    const unmentioned = fixture('dingtalk', 'text-group-at.json');
    unmentioned.isInAtList = false;
    unmentioned.atUsers = unmentioned.atUsers.slice(1);
    expect(normalizedBody(channelOf('dingtalk'), unmentioned).events[0]!.mentions).toEqual(['0251383547']);
  });
});
