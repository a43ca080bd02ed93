import { readFileSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ports = resolve(import.meta.dirname, '..', '..', 'src', 'core', 'ports');

/** The roles `Store` is the sum of, as the compiler sees them: every interface it extends, at any depth. */
function rolesOfStore(): Map<string, { file: string; members: string[]; bases: string[] }> {
  const program = ts.createProgram([resolve(ports, 'index.ts')], {
    strict: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    noEmit: true,
  });
  const checker = program.getTypeChecker();
  const index = checker.getSymbolAtLocation(program.getSourceFile(resolve(ports, 'index.ts'))!)!;
  const store = checker.getExportsOfModule(index).find((symbol) => symbol.name === 'Store')!;
  const roles = new Map<string, { file: string; members: string[]; bases: string[] }>();
  const visit = (type: ts.InterfaceType): void => {
    for (const base of checker.getBaseTypes(type)) {
      const symbol = base.getSymbol()!;
      if (roles.has(symbol.name)) continue;
      const declaration = symbol.declarations![0] as ts.InterfaceDeclaration;
      const bases = checker.getBaseTypes(base as ts.InterfaceType).map((inner) => inner.getSymbol()!.name);
      roles.set(symbol.name, {
        file: basename(declaration.getSourceFile().fileName),
        members: declaration.members.map((member) => member.name!.getText()),
        bases,
      });
      visit(base as ts.InterfaceType);
    }
  };
  visit(checker.getDeclaredTypeOfSymbol(store) as ts.InterfaceType);
  return roles;
}

/** `AdmissionStore` -> `admission-store.ts`. */
const fileOf = (role: string): string => `${role.replace(/(?<=[a-z])(?=[A-Z])/g, '-').toLowerCase()}.ts`;
const quoted = (text: string): string[] => [...text.matchAll(/`([^`]+)`/g)].map((match) => match[1]!);
const counts = [
  '',
  'one',
  'two',
  'three',
  'four',
  'five',
  'six',
  'seven',
  'eight',
  'nine',
  'ten',
  'eleven',
  'twelve',
  'thirteen',
  'fourteen',
];

/** The rows of the role table in docs/stores.md: role, the names its Methods column quotes. */
function tableOfStores(): Array<[role: string, methods: string[]]> {
  const text = readFileSync('docs/stores.md', 'utf8');
  const rows = text.slice(text.indexOf('| Role | Methods |')).split('\n').slice(2);
  const table: Array<[role: string, methods: string[]]> = [];
  for (const row of rows) {
    if (!row.startsWith('|')) break;
    const [role, methods] = row.split(' | ');
    table.push([quoted(role!)[0]!, quoted(methods!)]);
  }
  return table;
}

/** The design notes' paragraph on the roles, up to the sentence after their list. */
function designParagraph(): string {
  const text = readFileSync('docs/design.md', 'utf8');
  const start = text.indexOf('- **Store roles**');
  return text.slice(start, text.indexOf('They keep their', start));
}

describe('the store port', () => {
  const roles = rolesOfStore();

  it('keeps each role in a file of its own under src/core/ports/', () => {
    expect(roles.size).toBeGreaterThan(0);
    for (const [role, { file }] of roles) expect({ role, file }).toEqual({ role, file: fileOf(role) });
  });

  it('has the role table of docs/stores.md list every role once, with its methods', () => {
    const table = tableOfStores();
    expect(table.map(([role]) => role).sort()).toEqual([...roles.keys()].sort());
    for (const [role, methods] of table)
      expect({ role, methods: [...methods].sort() }).toEqual({
        role,
        methods: [...roles.get(role)!.members, ...roles.get(role)!.bases].sort(),
      });
  });

  it('has docs/stores.md and docs/design.md count the roles alike, and design.md name each of them', () => {
    const said = (text: string): string | undefined => /`Store`[^|]*?\sis\s+the sum of (\w+) roles/.exec(text)?.[1];
    expect(said(readFileSync('docs/stores.md', 'utf8'))).toBe(counts[roles.size]);
    expect(said(designParagraph())).toBe(counts[roles.size]);
    const named = quoted(designParagraph()).filter((name) => /^[A-Z]\w+$/.test(name) && name !== 'Store');
    expect([...named].sort()).toEqual([...roles.keys()].sort());
  });
});
