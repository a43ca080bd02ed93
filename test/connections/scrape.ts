/** A metric's value in a Prometheus scrape (0 when the series is absent). */
export function metric(scrape: string, series: string): number {
  const line = scrape.split('\n').find((text) => text.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}
