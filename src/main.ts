import { createServer } from 'node:http';
import pino from 'pino';
import { loadConfig } from './config/load.js';
import { isConfigError } from './errors.js';
import { createIntake } from './intake.js';

/** Process entry: config -> store -> intake -> listen -> graceful stop. */
async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (isConfigError(error)) {
      console.error(`agent-intake: ${error.message}`);
      process.exit(1);
    }
    throw error;
  }
  const logger = pino({ level: config.logLevel });
  const intake = await createIntake({ config, logger });
  const server = createServer(intake.app.callback());
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.server.port, config.server.host, resolve);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.server.port;
  logger.info({ host: config.server.host, port, store: config.store, channels: config.channels.map((c) => c.id) }, `agent-intake listening on http://${config.server.host}:${port}`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping: no new deliveries, flushing open buffers');
    server.close();
    server.closeIdleConnections();
    const force = setTimeout(() => server.closeAllConnections(), 10_000);
    force.unref();
    try {
      await intake.close();
      logger.info('stopped cleanly');
      process.exit(0);
    } catch (error) {
      logger.error({ err: error }, 'stop failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((error: unknown) => {
  console.error('agent-intake failed to start:', error);
  process.exit(1);
});
