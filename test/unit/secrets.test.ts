import { describe, expect, it } from 'vitest';
import { createSecretBox, hashSecret, safeEqual, secretsKeyFrom, verifySecret } from '../../src/lib/secrets.js';

describe('secrets at rest', () => {
  it('hashes with salted scrypt and verifies only the right secret', async () => {
    const a = await hashSecret('s3cret');
    const b = await hashSecret('s3cret');
    expect(a).not.toBe(b);
    expect(a).not.toContain('s3cret');
    expect(await verifySecret('s3cret', a)).toBe(true);
    expect(await verifySecret('s3cret!', a)).toBe(false);
    expect(await verifySecret('s3cret', 'garbage')).toBe(false);
  });

  it('seals credentials with AES-GCM: opaque, tamper-evident, key-bound', () => {
    const box = createSecretBox(secretsKeyFrom('11'.repeat(32)));
    const sealed = box.seal('{"password":"hunter2"}');
    expect(sealed).not.toContain('hunter2');
    expect(box.open(sealed)).toBe('{"password":"hunter2"}');
    const tampered = sealed.slice(0, -4) + (sealed.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    expect(() => box.open(tampered)).toThrow();
    const other = createSecretBox(secretsKeyFrom('22'.repeat(32)));
    expect(() => other.open(sealed)).toThrow();
  });

  it('refuses a secrets key of the wrong length', () => {
    expect(() => secretsKeyFrom('abcd')).toThrow(/32 bytes/);
  });

  it('compares fixed credentials by value', () => {
    expect(safeEqual('operator', 'operator')).toBe(true);
    expect(safeEqual('operator', 'operatoR')).toBe(false);
  });
});
