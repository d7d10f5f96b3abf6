export function formatBytes(bytes: number | undefined): string {
  if (bytes === undefined) return '–';
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${units[unit]}`;
}

export function formatCpu(cpu: number | undefined): string {
  return cpu === undefined ? '–' : `${cpu < 10 ? cpu.toFixed(1) : Math.round(cpu)} %`;
}

/** Epoch seconds as a local date and time. */
export function formatTime(seconds: unknown): string {
  if (typeof seconds !== 'number' || seconds <= 0) return '–';
  return new Date(seconds * 1000).toLocaleString();
}
