/** Free TCP ports on 127.0.0.1, for servers a test starts itself. */
import { createServer } from 'node:net';

export async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: count }, async () => {
      const s = createServer();
      await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
      return s;
    }),
  );
  const ports = servers.map((s) => (s.address() as { port: number }).port);
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  return ports;
}
