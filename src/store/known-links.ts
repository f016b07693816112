/**
 * Devices this process has seen linked, per project: a link is permanent (the first link of a
 * device wins for good, CONTRACT §2.6), so a device known to be linked never needs its link
 * written or looked up again. Without this every batch re-sent the link of each identified device
 * it carried — ~1300 no-op link inserts per 2000-event batch in the identity bench.
 *
 * Only links whose write has committed are added (a rolled-back link must be written again), and
 * the set is bounded: when full it starts over, which costs only the no-op writes it saved.
 */
import type { IdentityLink } from './event-rows.js';

const MAX_DEVICES = 200_000;

export class KnownLinks {
  private readonly devices = new Set<string>();

  private key(projectId: number, deviceId: string): string {
    return `${projectId}\u0000${deviceId}`;
  }

  /** The links of devices not yet known to be linked. */
  unknown(projectId: number, links: readonly IdentityLink[]): IdentityLink[] {
    if (links.length === 0 || this.devices.size === 0) return links.slice();
    return links.filter((l) => !this.devices.has(this.key(projectId, l.deviceId)));
  }

  /** Records links that are now committed (written, or already there). */
  committed(projectId: number, links: readonly IdentityLink[]): void {
    if (this.devices.size + links.length > MAX_DEVICES) this.devices.clear();
    for (const l of links) this.devices.add(this.key(projectId, l.deviceId));
  }
}
