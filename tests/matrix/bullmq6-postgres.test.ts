/** Matrix cell: BullMQ 6 on PostgreSQL (`createPostgresBackend`), in a project with no Redis client installed. */
import { CELLS } from './cells.js';
import { matrixCell } from './matrix-cell.js';

matrixCell(CELLS.bullmq6Postgres);
