/**
 * The error `promise` rejects with; fails the test when it resolves instead.
 *
 * @example
 * const error = await rejectionOf(client.query('INSERT ...'));
 */
export async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection, but the promise resolved');
}
