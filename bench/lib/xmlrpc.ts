// A tiny XML-RPC client (enough for supervisord): POST over a keep-alive http.Agent, values are
// strings, integers, booleans, doubles, arrays and structs. Faults become thrown Errors.
import http from 'node:http';

export type XmlRpcValue = string | number | boolean | XmlRpcValue[] | { [key: string]: XmlRpcValue };

const escapeXml = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const unescapeXml = (s: string): string =>
  s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&amp;/g, '&');

function encodeValue(value: XmlRpcValue): string {
  if (typeof value === 'string') return `<value><string>${escapeXml(value)}</string></value>`;
  if (typeof value === 'boolean') return `<value><boolean>${value ? 1 : 0}</boolean></value>`;
  if (typeof value === 'number')
    return Number.isInteger(value) ? `<value><int>${value}</int></value>` : `<value><double>${value}</double></value>`;
  if (Array.isArray(value)) return `<value><array><data>${value.map(encodeValue).join('')}</data></array></value>`;
  const members = Object.entries(value).map(([k, v]) => `<member><name>${escapeXml(k)}</name>${encodeValue(v)}</member>`);
  return `<value><struct>${members.join('')}</struct></value>`;
}

/** Parses the first <value> at `pos`; returns the value and the position after its </value>. */
function parseValue(xml: string, pos: number): { value: XmlRpcValue; end: number } {
  const open = /<value>\s*(?:<(\w+)\s*(\/)?>)?/y;
  const start = xml.indexOf('<value', pos);
  if (start < 0) throw new Error('xml-rpc: no <value>');
  open.lastIndex = start;
  const m = open.exec(xml);
  if (m === null) throw new Error('xml-rpc: bad <value>');
  const type = m[1];
  let cursor = open.lastIndex;
  const closeValue = (at: number): number => {
    const end = xml.indexOf('</value>', at);
    if (end < 0) throw new Error('xml-rpc: unclosed <value>');
    return end + '</value>'.length;
  };
  if (type === undefined) {
    const end = xml.indexOf('</value>', cursor);
    return { value: unescapeXml(xml.slice(cursor, end)), end: end + 8 };
  }
  if (m[2] === '/') return { value: type === 'string' ? '' : type === 'nil' ? '' : '', end: closeValue(cursor) };
  if (type === 'array') {
    const items: XmlRpcValue[] = [];
    const dataEnd = (): number => xml.indexOf('</data>', cursor);
    for (;;) {
      const nextValue = xml.indexOf('<value', cursor);
      const stop = dataEnd();
      if (nextValue < 0 || (stop >= 0 && stop < nextValue)) break;
      const item = parseValue(xml, nextValue);
      items.push(item.value);
      cursor = item.end;
    }
    return { value: items, end: closeValue(xml.indexOf('</array>', cursor)) };
  }
  if (type === 'struct') {
    const out: { [key: string]: XmlRpcValue } = {};
    for (;;) {
      const member = xml.indexOf('<member>', cursor);
      const stop = xml.indexOf('</struct>', cursor);
      if (member < 0 || stop < member) break;
      const nameStart = xml.indexOf('<name>', member) + 6;
      const nameEnd = xml.indexOf('</name>', nameStart);
      const item = parseValue(xml, nameEnd);
      out[unescapeXml(xml.slice(nameStart, nameEnd))] = item.value;
      cursor = xml.indexOf('</member>', item.end) + 9;
    }
    return { value: out, end: closeValue(xml.indexOf('</struct>', cursor)) };
  }
  const close = `</${type}>`;
  const end = xml.indexOf(close, cursor);
  const text = xml.slice(cursor, end);
  let value: XmlRpcValue;
  if (type === 'int' || type === 'i4' || type === 'i8' || type === 'double') value = Number(text);
  else if (type === 'boolean') value = text.trim() === '1';
  else value = unescapeXml(text);
  return { value, end: closeValue(end + close.length) };
}

export interface XmlRpcClient {
  call(method: string, ...params: XmlRpcValue[]): Promise<XmlRpcValue>;
  close(): void;
}

export function xmlRpcClient(host: string, port: number, path = '/RPC2'): XmlRpcClient {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  return {
    call(method, ...params) {
      const body = Buffer.from(
        `<?xml version="1.0"?><methodCall><methodName>${method}</methodName><params>${params
          .map((p) => `<param>${encodeValue(p)}</param>`)
          .join('')}</params></methodCall>`,
      );
      return new Promise((resolve, reject) => {
        const req = http.request(
          { host, port, path, method: 'POST', agent, headers: { 'content-type': 'text/xml', 'content-length': body.length } },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => {
              const xml = Buffer.concat(chunks).toString('utf8');
              try {
                if (res.statusCode !== 200) throw new Error(`xml-rpc ${method}: HTTP ${res.statusCode}`);
                const parsed = parseValue(xml, 0).value;
                if (xml.includes('<fault>')) {
                  const fault = parsed as { faultString?: XmlRpcValue };
                  throw new Error(`xml-rpc ${method}: ${JSON.stringify(fault.faultString)}`);
                }
                resolve(parsed);
              } catch (error) {
                reject(error instanceof Error ? error : new Error(String(error)));
              }
            });
            res.on('error', reject);
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    },
    close() {
      agent.destroy();
    },
  };
}
