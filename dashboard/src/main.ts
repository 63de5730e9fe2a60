// jobwire-dashboard: parses the flags (config.ts), connects to the broker
// (BrokerClient) and serves the dashboard (DashboardServer) until SIGTERM or
// SIGINT, reloading its TLS files (CertReloader) every --reload_interval_ms
// and on SIGHUP. Exit 0 after a clean stop, 2 on a bad flag, 1 when it cannot listen.
import { BrokerClient } from './broker_client';
import { CertReloader, checkCa, checkCertAndKey, PemSet } from './cert_reloader';
import { Config, parseConfig, USAGE } from './config';
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
  const reloaders = certReloaders(config, server, broker);
  for (const r of reloaders) r.start();
  process.on('SIGHUP', () => {
    stderrLogger({ msg: 'reload requested' });
    for (const r of reloaders) r.reload(true);
  });
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
    sessions: config.sessionKey ? 'sealed (shared by replicas with the same key)' : 'in memory (one replica)',
  });
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  for (const r of reloaders) r.stop();
  await server.stop();
  broker.close();
  return 0;
}

/**
 * One CertReloader for the HTTPS listener's certificate and key, one for the
 * TLS files used to reach the broker; each only when its files are given.
 */
function certReloaders(config: Config, server: DashboardServer, broker: BrokerClient): CertReloader[] {
  const pick = (names: string[]) => Object.fromEntries(names.filter((n) => config.files[n]).map((n) => [n, config.files[n]]));
  const out: CertReloader[] = [];
  if (config.tlsCert && config.tlsKey) {
    out.push(new CertReloader('tls certificate', pick(['tls_cert', 'tls_key']), { tls_cert: config.tlsCert, tls_key: config.tlsKey }, (p) => {
      checkCertAndKey('tls_cert', p.tls_cert, 'tls_key', p.tls_key);
      server.setTlsCertificate(p.tls_cert, p.tls_key);
    }, stderrLogger, config.reloadIntervalMs));
  }
  if (config.brokerCa) {
    const inUse: PemSet = { broker_ca: config.brokerCa };
    if (config.brokerCert && config.brokerKey) Object.assign(inUse, { broker_cert: config.brokerCert, broker_key: config.brokerKey });
    out.push(new CertReloader('broker tls files', pick(['broker_ca', 'broker_cert', 'broker_key']), inUse, (p) => {
      checkCa('broker_ca', p.broker_ca);
      if (p.broker_cert) checkCertAndKey('broker_cert', p.broker_cert, 'broker_key', p.broker_key);
      broker.setTls({ rootCa: p.broker_ca, clientCert: p.broker_cert, clientKey: p.broker_key });
    }, stderrLogger, config.reloadIntervalMs));
  }
  return out;
}

main().then((code) => process.exit(code));
