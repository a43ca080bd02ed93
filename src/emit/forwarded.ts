import type { InboundEvent } from '../events/inbound.js';
import type { ForwardedMessage } from '../events/reply.js';

/**
 * What a forwarded part carries, from what its adapter marked in `fields` (`forwarded`,
 * `forward_sender_id`, `forward_sender_name`, `forward_date`): a single forward (Telegram,
 * WhatsApp) is one message, the part's own content under its original author and time where
 * the platform gives them. A merged forward (OneBot `forward_id`, Feishu `merge_forward`) names
 * its messages only by handle: none are known here, its nodes come from `expanded` when they
 * were read. `undefined`: the part is no forward.
 */
export function forwardedOf(event: InboundEvent, expanded?: ForwardedMessage[]): ForwardedMessage[] | undefined {
  const fields = event.fields;
  if (fields?.forwarded !== 'true') return undefined;
  if (expanded) return expanded;
  if (fields.forward_id !== undefined || fields.message_type === 'merge_forward') return [];
  const name = fields.forward_sender_name;
  const at = Number(fields.forward_date);
  return [
    {
      sender: name ? { id: fields.forward_sender_id ?? '', name } : { id: fields.forward_sender_id ?? '' },
      content: event.text,
      timestamp: fields.forward_date && Number.isSafeInteger(at) && at >= 0 ? at : event.timestamp,
      media: event.media.flatMap((item) => {
        const ref = item.ref ?? item.url;
        return ref ? [{ type: item.type ?? 'document', ref }] : [];
      }),
    },
  ];
}
