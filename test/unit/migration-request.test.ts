import { describe, expect, it } from 'vitest';
import { daysBetween, parseMigrationRequest } from '../../src/domain/migration-request.js';

const NOW = Date.UTC(2024, 5, 15, 12, 0, 0); // 2024-06-15 12:00 UTC
const base = { SOURCE_TOOL_API_KEY: 'key', SOURCE_TOOL_API_SECRET: 'secret', SERVICE_TOKEN: 'token' };

function ok(body: unknown) {
  const out = parseMigrationRequest('amplitude', body, NOW);
  if (!out.ok) throw new Error(out.message);
  return out.request;
}

function error(body: unknown): string {
  const out = parseMigrationRequest('amplitude', body, NOW);
  if (out.ok) throw new Error('expected a refusal');
  return out.message;
}

describe('parseMigrationRequest', () => {
  it('defaults to the last 30 complete UTC days, not a dry run, region from the body only', () => {
    expect(ok(base)).toEqual({
      tool: 'amplitude',
      apiKey: 'key',
      apiSecret: 'secret',
      serviceToken: 'token',
      startDate: '2024-05-16',
      endDate: '2024-06-14',
      dryRun: false,
      sourceRegion: undefined,
    });
    expect(daysBetween('2024-05-16', '2024-06-14')).toHaveLength(30);
  });

  it("accepts Mixpanel's spellings of the fields", () => {
    const r = ok({ AMPLITUDE_API_KEY: 'k2', AMPLITUDE_API_SECRET: 's2', MIXPANEL_TOKEN: 't2', DRY_RUN: true, REGION: 'eu' });
    expect([r.apiKey, r.apiSecret, r.serviceToken, r.dryRun, r.sourceRegion]).toEqual(['k2', 's2', 't2', true, 'EU']);
    expect(ok({ ...base, AMPLITUDE_API_KEY: 'key' }).apiKey).toBe('key'); // both spellings, same value
    expect(error({ ...base, AMPLITUDE_API_KEY: 'other' })).toMatch(/same field and disagree/);
  });

  it('fills the missing end of a range', () => {
    expect(ok({ ...base, START_DATE: '2024-06-01' })).toMatchObject({ startDate: '2024-06-01', endDate: '2024-06-14' });
    expect(ok({ ...base, END_DATE: '2024-03-31' })).toMatchObject({ startDate: '2024-03-02', endDate: '2024-03-31' });
    expect(ok({ ...base, START_DATE: '2024-06-15' })).toMatchObject({ startDate: '2024-06-15', endDate: '2024-06-15' });
  });

  it('refuses bad dates and ranges with a message naming the field', () => {
    expect(error({ ...base, START_DATE: '2024-06-10', END_DATE: '2024-06-01' })).toMatch(/'START_DATE' 2024-06-10 is after 'END_DATE' 2024-06-01/);
    expect(error({ ...base, START_DATE: '2024-02-30' })).toMatch(/calendar date/);
    expect(error({ ...base, END_DATE: '06/01/2024' })).toMatch(/'END_DATE' must be a calendar date/);
    expect(error({ ...base, START_DATE: 20240601 })).toMatch(/START_DATE/);
    expect(error({ ...base, END_DATE: '2024-06-16' })).toMatch(/in the future/);
    expect(error({ ...base, START_DATE: '2023-06-02', END_DATE: '2024-06-01' })).toMatch(/366 days; one migration covers at most 365/);
    expect(ok({ ...base, START_DATE: '2023-06-03', END_DATE: '2024-06-01' }).startDate).toBe('2023-06-03'); // exactly 365
  });

  it('refuses missing, empty, mistyped and unknown fields clearly', () => {
    expect(error({ SOURCE_TOOL_API_SECRET: 's', SERVICE_TOKEN: 't' })).toBe("'SOURCE_TOOL_API_KEY' (or 'AMPLITUDE_API_KEY') is required");
    expect(error({ ...base, SERVICE_TOKEN: '  ' })).toMatch(/'SERVICE_TOKEN' must not be empty/);
    expect(error({ ...base, SOURCE_TOOL_API_SECRET: 42 })).toMatch(/'SOURCE_TOOL_API_SECRET' must be a string/);
    expect(error({ ...base, DRY_RUN: 'yes' })).toMatch(/DRY_RUN/);
    expect(error({ ...base, REGION: 'IN' })).toMatch(/'REGION' must be 'US' or 'EU'/);
    expect(error({ ...base, START_DAT: '2024-01-01' })).toMatch(/unknown field\(s\) 'START_DAT'/);
    expect(error([base])).toMatch(/JSON object/);
    expect(error(null)).toMatch(/JSON object/);
  });
});
