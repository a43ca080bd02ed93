import { createHmac } from 'node:crypto';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { postJson, until, type Running } from '../../support/helpers.js';
import { fixtureBytes } from '../../fixtures/index.js';
import { takeoverInstances } from '../../connections/takeover.js';
import { APP_TOKEN, fakeSlack, message } from '../../connections/fake-slack.js';

/*
 * Two instances on one real redis-server share one Slack Socket Mode channel: one holds the
 * socket (the channel's lease); when it is killed the survivor opens the next one. What the
 * victim acknowledged is kept; Slack's retry of an envelope is a duplicate, never emitted twice.
 * Over the Events API, a copy Slack sends under another ts is a duplicate on whichever instance.
 */

const instances = takeoverInstances();

// The test expects the victim to keep the socket until it is killed: a holder that cannot renew for
// 2/3 of its lease lets go, so the lease outlasts a 1 s stall of the child on a loaded machine (the survivor
// takes over within it after the kill).
const channel = (api: string) => ({
  id: 'slack',
  adapter: 'slack',
  transport: 'socket',
  appToken: APP_TOKEN,
  apiBaseUrl: api,
  leaseMs: 1500,
  reconnectMinMs: 20,
  reconnectMaxMs: 200,
});
const ts = (i: number) => `1700000010.0001${String(i).padStart(2, '0')}`;

describe('a Slack Socket Mode channel on several instances', () => {
  it('is taken over by a survivor when its holder is killed (kill -9): nothing acknowledged is lost, a retried envelope is not emitted twice', async () => {
    const prefix = `sk${process.pid}`;
    const slack = await fakeSlack();
    instances.cleanup(() => slack.close());
    const victim = await instances.victim(prefix, channel(slack.api));
    await until(() => slack.state.open === 1, 10_000);
    const survivor = await instances.survivor(prefix, channel(slack.api));
    const recorded = async () =>
      (await survivor.intake.store.outboxAfter(0, 100)).flatMap((output) => output.messageIds ?? []);
    for (let i = 1; i <= 5; i++) slack.envelope(`env-${i}`, message(ts(i), `message ${i}`));
    await until(() => slack.acks.length === 5, 10_000);
    expect(slack.state.opened).toBe(1); // the survivor waits for the lease
    victim.kill('SIGKILL');
    await once(victim, 'exit');
    await until(() => slack.state.opened === 2 && slack.state.open === 1, 10_000);
    // Slack sends the last envelope again (as after a missed ack), then a new one.
    slack.envelope('env-5', message(ts(5), 'message 5'), 1);
    slack.envelope('env-6', message(ts(6), 'message 6'));
    await until(() => slack.acksBySocket[1]?.length === 2, 10_000);
    await until(async () => (await recorded()).length === 6, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const ids = await recorded();
    expect(ids.length).toBe(6);
    expect(new Set(ids).size).toBe(6);
    expect(survivor.intake.metrics.channelStats().slack).toMatchObject({ received: 2, deduped: 1 });
  }, 40_000);
});

describe("regression: Slack's copy of a message under another ts, delivered to another instance", () => {
  const secret = 'slack-signing-secret';
  const events = { id: 'slack', adapter: 'slack', signingSecret: secret };
  /** The fixture message as Slack sends it under `eventId` and `messageTs`, its client_msg_id kept. */
  const post = (service: Running, eventId: string, messageTs: string) => {
    const payload = JSON.parse(fixtureBytes('slack', 'message.json').toString());
    const body = JSON.stringify({ ...payload, event_id: eventId, event: { ...payload.event, ts: messageTs } });
    const timestamp = Math.floor(Date.now() / 1000);
    return postJson(`${service.url}/webhooks/slack`, body, {
      'x-slack-request-timestamp': String(timestamp),
      'x-slack-signature': `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:${body}`).digest('hex')}`,
    });
  };

  it('takes on B the copy of a message A admitted as a duplicate of its client_msg_id: one output', async () => {
    const prefix = `cmi${process.pid}`;
    const a = await instances.survivor(prefix, events);
    const b = await instances.survivor(prefix, events);
    expect((await post(a, 'Ev08MFMKH6', '1700000000.000100')).body.events).toEqual([
      { id: 'Ev08MFMKH6', verdict: 'accepted' },
    ]);
    expect((await post(b, 'Ev08MFMKH9', '1700000030.000200')).body.events).toEqual([
      { id: 'Ev08MFMKH9', verdict: 'duplicate' },
    ]);
    await until(async () => (await a.intake.store.openBuffers()) === 0, 10_000);
    expect((await a.intake.store.outboxAfter(0, 10)).map((record) => record.messageIds)).toEqual([
      ['C1:1700000000.000100'],
    ]);
  });
});
