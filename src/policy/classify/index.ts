export { builtInClassifier, classify } from './classify.js';
export { causeChain, composeClassifiers, throughCauses } from './compose.js';
export {
  classifyMysql,
  classifyPostgres,
  PERMANENT_MYSQL_ERRNOS,
  PERMANENT_SQLSTATE_CLASSES,
  TRANSIENT_MYSQL_ERRNOS,
  TRANSIENT_SQLSTATES,
} from './database.js';
export { classifyMarked } from './error-classes.js';
export { classifyHttp, httpStatusOf } from './http.js';
export { classifyNetwork, TRANSIENT_NETWORK_CODES, TRANSIENT_UNDICI_CODES } from './network.js';
export { classifyRedis, TRANSIENT_REDIS_REPLIES } from './redis.js';
export { parseRetryAfter, readRetryAfter } from './retry-after.js';
