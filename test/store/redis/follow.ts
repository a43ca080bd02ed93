/** An event stream read frame by frame as it comes, and whether the service ended it. */
export interface Followed {
  status: Promise<number>;
  frames: Array<{ id: string; event: string; data: unknown }>;
  /** Resolves when the response ended (the service closed the stream). */
  ended: Promise<void>;
  isEnded(): boolean;
  close(): void;
}

/** Open `url` as an event stream and keep every frame in `frames` until it ends or `close()`. */
export function follow(url: string, headers: Record<string, string> = {}): Followed {
  const controller = new AbortController();
  const frames: Followed['frames'] = [];
  let done = false;
  let status!: (code: number) => void;
  const statusP = new Promise<number>((resolve) => (status = resolve));
  const ended = (async () => {
    try {
      const response = await fetch(url, { headers, signal: controller.signal });
      status(response.status);
      const decoder = new TextDecoder();
      let buffer = '';
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let end;
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const fields = new Map<string, string>();
          for (const line of block.split('\n')) {
            const colon = line.indexOf(':');
            if (colon > 0) fields.set(line.slice(0, colon), line.slice(colon + 1).trimStart());
          }
          if (fields.has('data')) frames.push({ id: fields.get('id') ?? '', event: fields.get('event') ?? 'message', data: JSON.parse(fields.get('data') as string) });
        }
      }
    } catch {
      status(0);
    } finally {
      done = true;
    }
  })();
  return { status: statusP, frames, ended, isEnded: () => done, close: () => controller.abort() };
}
