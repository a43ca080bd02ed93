// An output's media: images as thumbnails, other files as download links; both fetched from
// /v1/media/ with the token and shown as blob: URLs.

import { api } from './api.js';
import { el } from './dom.js';

const mediaUrls = new Map(); // media path -> Promise<blob: URL>

/** The element for one `media[]` item of an output. */
export function mediaItem(item) {
  const url = `v1/media/${item.path.split('/').map(encodeURIComponent).join('/')}`;
  const name = item.path.split('/').pop();
  const label = `${item.type} · ${item.mime} · ${formatBytes(item.bytes)}`;
  const blobOf = () => {
    if (!mediaUrls.has(item.path)) {
      mediaUrls.set(
        item.path,
        api(url).then(async (response) => {
          if (!response.ok) throw new Error(`media answered ${response.status}`);
          return URL.createObjectURL(await response.blob());
        }),
      );
    }
    return mediaUrls.get(item.path);
  };
  if (item.type === 'image' && !item.path.startsWith('/')) {
    const img = el('img', { alt: label, title: label, class: 'thumb' });
    const figure = el('figure', { class: 'thumb-box' }, img, el('figcaption', {}, label));
    blobOf().then(
      (src) => {
        img.src = src;
      },
      () => {
        figure.classList.add('missing');
      },
    );
    return figure;
  }
  if (item.path.startsWith('/'))
    return el(
      'span',
      { class: 'file', title: item.path },
      `${name} (${label}; outside the working directory, not served)`,
    );
  const link = el('a', { href: '#', class: 'file', download: name, title: label }, `${name} (${label})`);
  link.addEventListener('click', async (event) => {
    if (link.href.startsWith('blob:')) return;
    event.preventDefault();
    try {
      link.href = await blobOf();
      link.click();
    } catch {
      link.classList.add('missing');
    }
  });
  return link;
}

function formatBytes(n) {
  if (typeof n !== 'number') return '?';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
