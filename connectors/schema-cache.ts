import type { ColumnInfo, TableRef } from './warehouse.js';

/**
 * Remembers each source's described columns for the connector's life: a sync describes the same
 * table several times (validation, read, mapping) and a remote warehouse charges a round trip for
 * each. A failed describe is forgotten, so the next call asks again.
 */
export class SchemaCache {
  private readonly schemas = new Map<string, Promise<ColumnInfo[]>>();

  get(source: TableRef, describe: () => Promise<ColumnInfo[]>): Promise<ColumnInfo[]> {
    const key = JSON.stringify(source);
    let pending = this.schemas.get(key);
    if (!pending) {
      pending = describe();
      this.schemas.set(key, pending);
      pending.catch(() => this.schemas.delete(key));
    }
    return pending;
  }

  clear(): void {
    this.schemas.clear();
  }
}
