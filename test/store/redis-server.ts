export { startRedis, type RedisServer, type RedisServerOptions } from '../support/redis.js';
export { freePort } from '../support/net.js';
