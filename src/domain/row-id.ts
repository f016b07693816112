/**
 * Projects, workspaces, warehouse sources and imports, and lookup tables have PostgreSQL
 * `integer` ids (`increments`). A larger number names no row, and PostgreSQL refuses it as a
 * parameter ("out of range", which was a 500): parsers and lookups treat it as unknown.
 */
export const MAX_ROW_ID = 2_147_483_647;
