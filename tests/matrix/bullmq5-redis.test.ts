/** Matrix cell: BullMQ 5 + ioredis 5 on Redis, in a project that installed them beside the packed stormguard. */
import { CELLS } from './cells.js';
import { matrixCell } from './matrix-cell.js';

matrixCell(CELLS.bullmq5Redis);
