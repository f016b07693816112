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
  /** Device ids per project: the id itself is the key (no per-lookup key string to build and hash). */
  private readonly devices = new Map<number, Set<string>>();
  private size = 0;

  /** The links of devices not yet known to be linked. */
  unknown(projectId: number, links: readonly IdentityLink[]): IdentityLink[] {
    const known = this.devices.get(projectId);
    if (links.length === 0 || !known) return links.slice();
    return links.filter((l) => !known.has(l.deviceId));
  }

  /** Records links that are now committed (written, or already there). */
  committed(projectId: number, links: readonly IdentityLink[]): void {
    if (links.length === 0) return;
    if (this.size + links.length > MAX_DEVICES) {
      this.devices.clear();
      this.size = 0;
    }
    let known = this.devices.get(projectId);
    if (!known) this.devices.set(projectId, (known = new Set()));
    for (const l of links) {
      if (known.has(l.deviceId)) continue;
      known.add(l.deviceId);
      this.size++;
    }
  }
}
