import { Agent, request as httpsRequest } from 'node:https';
import { it } from 'vitest';
import { startTestDaemon } from '@svc/testkit';

it('keepalive span', async () => {
  const daemon = await startTestDaemon({ files: { 'config/config.yaml': 'limits:\n  max_connections: 5000\n  max_connections_per_ip: 5000\n' } });
  const admin = await daemon.token('admin');
  await daemon.rest().call('PUT', '/svc/app/load-0', { token: admin, body: { command: 'sleep 600', status: 0 } });
  const agent = new Agent({ keepAlive: true, maxSockets: 300, maxFreeSockets: 300 });
  const t0 = Date.now();
  const ends: number[] = [];
  let closedByServer = 0;
  await Promise.all(Array.from({ length: 300 }, () => new Promise<void>((resolve, reject) => {
    const req = httpsRequest({ host: '127.0.0.1', port: daemon.restPort, path: '/svc/app/load-0', ca: daemon.ca, agent, headers: { authorization: `Bearer ${admin}` } }, (res) => {
      res.resume(); res.on('end', () => { ends.push(Date.now() - t0); if (res.headers.connection === 'close') closedByServer++; resolve(); });
    });
    req.on('socket', (s) => s.once('close', () => console.log('socket closed at', Date.now() - t0)));
    req.on('error', reject); req.end();
  })));
  const free = Object.values(agent.freeSockets).reduce((n, l) => n + (l?.length ?? 0), 0);
  console.log({ first: Math.min(...ends), last: Math.max(...ends), free, closedByServer });
  agent.destroy();
  await daemon.close();
}, 120000);
