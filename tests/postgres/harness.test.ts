import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { postgresBed, postgresRunDir } from '../helpers/postgres-bed.js';
import { TestPostgres, uniqueSchema } from '../helpers/postgres-server.js';

const bed = postgresBed();

describe('the test PostgreSQL', () => {
  it('serves a database of the file own, on a loopback port other than 5432', async () => {
    const client = new pg.Client({ connectionString: bed.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ db: string; port: string; fsync: string }>(
        "SELECT current_database() AS db, current_setting('port') AS port, current_setting('fsync') AS fsync",
      );
      expect(rows[0]?.db).toBe(bed.database.name);
      expect(rows[0]?.port).not.toBe('5432');
      expect(rows[0]?.fsync).toBe('off');
      const schema = uniqueSchema();
      await client.query(`CREATE SCHEMA ${schema}`);
      await client.query(`CREATE TABLE ${schema}.t (n int)`);
    } finally {
      await client.end();
    }
  });

  it('can be stopped like a crash and restarted on the same port', async () => {
    const server = await TestPostgres.start({ parent: postgresRunDir() });
    try {
      const db = await server.createDatabase();
      await server.stop();
      const refused = new pg.Client({ connectionString: db.url });
      await expect(refused.connect()).rejects.toThrow(/ECONNREFUSED/);
      await server.restart();
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      const { rows } = await client.query<{ one: number }>('SELECT 1 AS one');
      await client.end();
      expect(rows[0]?.one).toBe(1);
    } finally {
      await server.close();
    }
  });
});
