/** How an upload declares its format, and how CSV rows become records. */
import { describe, expect, it } from 'vitest';
import { looksGzipped, negotiateBatchUpload } from '../../src/domain/batch-format.js';
import { missingCsvColumns, recordFromCsv, recordFromJson } from '../../src/domain/batch-record.js';

const n = (type: unknown, format: unknown, contentType?: string, contentEncoding?: string) =>
  negotiateBatchUpload({ type, format, contentType, contentEncoding });

describe('negotiateBatchUpload', () => {
  it('takes the format from ?format= first, then the Content-Type', () => {
    expect(n('events', undefined, 'application/x-ndjson; charset=utf-8')).toMatchObject({ ok: true, format: 'ndjson', declaredGzip: false });
    expect(n('people', undefined, 'application/json')).toMatchObject({ ok: true, type: 'people', format: 'json' });
    expect(n('groups', undefined, 'text/csv')).toMatchObject({ ok: true, format: 'csv' });
    expect(n('events', 'csv', 'application/json')).toMatchObject({ ok: true, format: 'csv' });
    expect(n('events', 'ndjson', 'application/gzip')).toMatchObject({ ok: true, format: 'ndjson', declaredGzip: true });
    expect(n('events', undefined, 'application/json', 'gzip')).toMatchObject({ ok: true, declaredGzip: true });
  });

  it('refuses unknown types, formats, encodings and undeclared formats with 400/415', () => {
    expect(n('cats', undefined, 'text/csv')).toMatchObject({ ok: false, status: 400 });
    expect(n(undefined, undefined, 'text/csv')).toMatchObject({ ok: false, status: 400 });
    expect(n('events', 'xml', 'text/csv')).toMatchObject({ ok: false, status: 400 });
    expect(n('events', undefined, 'application/octet-stream')).toMatchObject({ ok: false, status: 415 });
    expect(n('events', undefined, 'application/gzip')).toMatchObject({ ok: false, status: 415, message: expect.stringMatching(/format=/) });
    expect(n('events', undefined, 'text/csv', 'br')).toMatchObject({ ok: false, status: 415 });
  });

  it('sniffs gzip by its magic bytes', () => {
    expect(looksGzipped(Buffer.from([0x1f, 0x8b, 8]))).toBe(true);
    expect(looksGzipped(Buffer.from('{"a"'))).toBe(false);
  });
});

describe('CSV and JSON units', () => {
  it('maps event rows: event column, typed properties, ISO time to ms, ids kept as text', () => {
    const header = ['event', 'time', 'distinct_id', '$insert_id', 'n', 'flag', 'zip', 'empty'];
    expect(recordFromCsv('events', header, ['buy', '2024-01-02T03:04:05Z', '007', '123', '4.5', 'TRUE', '01234', ''])).toEqual({
      ok: true,
      record: { event: 'buy', properties: { time: Date.parse('2024-01-02T03:04:05Z'), distinct_id: '007', $insert_id: '123', n: 4.5, flag: true, zip: '01234' } },
    });
    expect(recordFromCsv('events', header, ['buy'])).toMatchObject({ ok: false });
  });

  it('maps people and groups rows to $set updates', () => {
    expect(recordFromCsv('people', ['distinct_id', 'plan'], ['u1', 'pro'])).toEqual({ ok: true, record: { $distinct_id: 'u1', $set: { plan: 'pro' } } });
    expect(recordFromCsv('groups', ['$group_key', '$group_id', 'size'], ['company', '9', '10'])).toEqual({
      ok: true,
      record: { $group_key: 'company', $group_id: '9', $set: { size: 10 } },
    });
  });

  it('names the columns a CSV header lacks', () => {
    expect(missingCsvColumns('events', ['event', 'distinct_id'])).toEqual(['time']);
    expect(missingCsvColumns('people', ['x'])).toEqual(['$distinct_id']);
    expect(missingCsvColumns('groups', ['group_key', 'group_id'])).toEqual([]);
  });

  it('turns an unparsable JSON unit into a rejection, not an exception', () => {
    expect(recordFromJson(Buffer.from('{"a":1}'))).toEqual({ ok: true, record: { a: 1 } });
    expect(recordFromJson(Buffer.from('{"a":'))).toMatchObject({ ok: false, message: expect.stringMatching(/not valid JSON/) });
  });
});
