/**
 * How MySQL/MariaDB cells become row values, independent of the server's and this process's time
 * zones: DATETIME/TIMESTAMP stay the server's text in a UTC session ('YYYY-MM-DD HH:MM:SS.ffffff',
 * exact, so a watermark bound back compares exactly; the mapping reads it as UTC), DECIMAL as a
 * number, TINYINT(1) as a boolean, BIGINT exact (a string beyond 2^53), JSON parsed.
 */
import type { TypeCast } from 'mysql2';

function exactInteger(text: string): number | string {
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : text;
}

export const mysqlTypeCast: TypeCast = (field, next) => {
  switch (field.type) {
    case 'TINY': {
      if (field.length !== 1) return next();
      const v = field.string();
      return v === null ? null : v !== '0';
    }
    case 'LONGLONG': {
      const v = field.string();
      return v === null ? null : exactInteger(v);
    }
    case 'DECIMAL':
    case 'NEWDECIMAL': {
      const v = field.string();
      return v === null ? null : Number.isFinite(Number(v)) ? Number(v) : v;
    }
    case 'DATETIME':
    case 'DATETIME2':
    case 'TIMESTAMP':
    case 'TIMESTAMP2':
    case 'DATE':
    case 'NEWDATE':
      return field.string();
    case 'JSON': {
      const v = field.string('utf8');
      if (v === null) return null;
      try {
        return JSON.parse(v) as unknown;
      } catch {
        return v;
      }
    }
    default:
      return next();
  }
};

/** mysql2's numeric column type codes → names (lower-cased), for describing a query's columns. */
export const MYSQL_TYPE_NAMES: Record<number, string> = {
  0: 'decimal',
  1: 'tinyint',
  2: 'smallint',
  3: 'int',
  4: 'float',
  5: 'double',
  6: 'null',
  7: 'timestamp',
  8: 'bigint',
  9: 'mediumint',
  10: 'date',
  11: 'time',
  12: 'datetime',
  13: 'year',
  14: 'date',
  15: 'varchar',
  16: 'bit',
  245: 'json',
  246: 'decimal',
  247: 'enum',
  248: 'set',
  249: 'tinyblob',
  250: 'mediumblob',
  251: 'longblob',
  252: 'blob',
  253: 'varchar',
  254: 'char',
  255: 'geometry',
};
