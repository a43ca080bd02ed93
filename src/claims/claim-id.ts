import { RequestError } from '../core/errors.js';

/**
 * A claim's id, as workers hold it: `<outputId>.<attempt>.<token>`. Output ids are 21 URL-safe
 * characters without '.', so the id is URL-safe too and splits back without ambiguity. Workers
 * treat it as opaque; the service reads the output, the attempt and the lease's fencing token
 * out of it, so that any instance answers an ack without keeping claims in memory.
 */
export interface ClaimId {
  outputId: string;
  attempt: number;
  token: number;
}

/** The id of the claim that took attempt `attempt` of output `outputId` under lease `token`. */
export function claimIdOf(outputId: string, attempt: number, token: number): string {
  return `${outputId}.${attempt}.${token}`;
}

const CLAIM_ID = /^([A-Za-z0-9_-]{1,128})\.([1-9]\d{0,8})\.(\d{1,16})$/;

/** The parts of a claim id; not one is 404 unknown_claim. */
export function parseClaimId(id: string): ClaimId {
  const match = CLAIM_ID.exec(id);
  if (!match)
    throw new RequestError(
      'unknown_claim',
      404,
      `"${id.slice(0, 80)}" is not a claim id (<outputId>.<attempt>.<token>, as POST /v1/claims hands them out)`,
    );
  return { outputId: match[1] as string, attempt: Number(match[2]), token: Number(match[3]) };
}

/** The answer to claim `id` once its lease ran out or another claim took its output. */
export function claimLost(id: string): RequestError {
  return new RequestError(
    'claim_lost',
    409,
    `Claim "${id}" is lost: the lease on this output ran out or was taken by another claim; it is offered again`,
  );
}
