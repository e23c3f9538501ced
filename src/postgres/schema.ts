import { InvalidInputError } from '../errors/invalid-input-error.js';

/**
 * The default schema of stormguard's PostgreSQL tables and functions.
 *
 * @example
 * new PostgresBreakerStore({ connection: url }); // tables in "stormguard"
 */
export const DEFAULT_SCHEMA = 'stormguard';

// Lower case only: an unquoted name in psql folds to lower case, so `stormguard migrate --schema Shop`
// and `SELECT * FROM Shop.breakers` would otherwise name two different schemas.
const SCHEMA = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * Throws an {@link InvalidInputError} unless `schema` is a plain lower-case PostgreSQL identifier
 * (1-63 letters, digits or `_`, not starting with a digit) that is not reserved for the system.
 *
 * @example
 * assertSchema('stormguard'); // ok
 * assertSchema('Shop'); // throws, naming the rule
 */
export function assertSchema(schema: unknown): asserts schema is string {
  if (typeof schema !== 'string' || !SCHEMA.test(schema) || schema.startsWith('pg_'))
    throw new InvalidInputError(
      `schema ${JSON.stringify(schema)}: use 1-63 lower-case letters, digits or '_', not starting with a ` +
        "digit or 'pg_' (for example stormguard or shop_retries)",
    );
}

/** `schema` as a quoted SQL identifier, for text spliced into statements (after {@link assertSchema}). */
export function quotedSchema(schema: string): string {
  return `"${schema}"`;
}
