import { serializeEvent } from '../runtime/session/journal.ts';
import { assertLosslessJson } from '../runtime/session/json.ts';
const N = 200000;
const events: any[] = [];
for (let i = 0; i < N; i++) {
  const chunk = Object.freeze({ type: 'tool-call-delta', index: i % 1000, arguments: '{"ci' + (i % 7) });
  const data = Object.freeze({ turn: 1, step: 1, chunk });
  events.push(Object.freeze({ seq: i + 1, type: 'assistant/chunk', atMs: Date.now(), data }));
}
for (let r = 0; r < 5; r++) {
  let c0 = process.cpuUsage(); let len = 0;
  for (const e of events) len += serializeEvent(e).length;
  let c = process.cpuUsage(c0);
  const ser = (c.user + c.system) / N;
  c0 = process.cpuUsage();
  for (const e of events) len += JSON.stringify(e.data).length;
  c = process.cpuUsage(c0);
  const js = (c.user + c.system) / N;
  c0 = process.cpuUsage();
  for (const e of events) assertLosslessJson(e.data, 'data', true);
  c = process.cpuUsage(c0);
  console.log('serializeEvent µs', ser.toFixed(3), 'JSON.stringify µs', js.toFixed(3), 'lossless µs', ((c.user + c.system) / N).toFixed(3), len);
}
