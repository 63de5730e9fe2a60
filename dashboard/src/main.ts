// jobwire-dashboard: parses the flags (config.ts), connects to the broker
// (BrokerClient) and serves the dashboard (DashboardServer) until SIGTERM or
// SIGINT. Exit 0 after a clean stop, 2 on a bad flag, 1 when it cannot listen.
import { BrokerClient } from './broker_client';
import { parseConfig, USAGE } from './config';
import { DashboardServer, stderrLogger } from './dashboard_server';

async function main(): Promise<number> {
  let config;
  try {
    config = parseConfig(process.argv.slice(2), process.env);
  } catch (err) {
    process.stderr.write(`jobwire-dashboard: ${(err as Error).message}\n`);
    return 2;
  }
  if (config === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const broker = new BrokerClient({
    address: config.broker,
    rootCa: config.brokerCa,
    clientCert: config.brokerCert,
    clientKey: config.brokerKey,
    protoDir: config.protoDir,
  });
  const server = new DashboardServer(config, broker);
  let port: number;
  try {
    port = await server.start();
  } catch (err) {
    stderrLogger({ msg: 'cannot listen', listen: config.listen, error: String(err) });
    return 1;
  }
  stderrLogger({
    msg: 'listening',
    listen: config.listen,
    port,
    tls: Boolean(config.tlsCert),
    broker: config.broker,
    broker_tls: Boolean(config.brokerCa),
    broker_mtls: Boolean(config.brokerCert),
    read_only: config.readOnly,
    require_login: config.requireLogin,
    public_origin: config.publicOrigin,
  });
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  await server.stop();
  broker.close();
  return 0;
}

main().then((code) => process.exit(code));
