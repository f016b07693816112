/**
 * What bounds a sync: it can land rows no faster than the store takes them (the store's floor
 * over the same rows, floors.ts) nor faster than its source hands them out (the bare client
 * read). Its ratio is against the slower of the two, and says which one that was.
 */
export function syncRatio(sync: number, storeFloor: number, bareRead: number): string {
  const bound = storeFloor <= bareRead ? 'store floor' : 'bare read';
  return `${(sync / Math.min(storeFloor, bareRead)).toFixed(2)} of floor (${bound})`;
}
