/** Refuses to run against a database whose name does not say "test" (tests drop schemas). */
export default function setup(): void {
  const url = process.env.TEST_DATABASE_URL;
  if (url) {
    const name = new URL(url).pathname.replace(/^\//, '');
    if (!/test/i.test(name)) throw new Error(`TEST_DATABASE_URL names database '${name}', which does not say test: refusing`);
  }
}
