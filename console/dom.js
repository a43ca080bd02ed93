// DOM helpers shared by the console's modules. Every string that came from a webhook or a bot
// is put into the page as text (textContent / text nodes), never as HTML.

export const $ = (id) => document.getElementById(id);

/** Build an element; string and number children become text nodes. */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key === 'data') Object.assign(node.dataset, value);
    else if (key === 'on') for (const [event, fn] of Object.entries(value)) node.addEventListener(event, fn);
    else node[key] = value;
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(
      typeof child === 'string' || typeof child === 'number' ? document.createTextNode(String(child)) : child,
    );
  }
}

/** `1 attempt`, `2 attempts`: a count and its noun, agreeing. */
export const counted = (count, noun) => `${count} ${noun}${count === 1 ? '' : 's'}`;

export const time = (ms) => new Date(ms).toLocaleTimeString([], { hour12: false });
export const short = (id) => (id.length > 14 ? `${id.slice(0, 6)}…${id.slice(-6)}` : id);
