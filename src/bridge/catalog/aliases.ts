// Python names for servers and tools: lowercased, every non-identifier character to "_",
// keywords and leading digits made safe, collisions numbered in a stable order.

const PYTHON_KEYWORDS = new Set([
  'false',
  'none',
  'true',
  'and',
  'as',
  'assert',
  'async',
  'await',
  'break',
  'class',
  'continue',
  'def',
  'del',
  'elif',
  'else',
  'except',
  'finally',
  'for',
  'from',
  'global',
  'if',
  'import',
  'in',
  'is',
  'lambda',
  'nonlocal',
  'not',
  'or',
  'pass',
  'raise',
  'return',
  'try',
  'while',
  'with',
  'yield',
  'match',
  'case',
  'type',
]);

export function pythonName(name: string): string {
  let alias = name.toLowerCase().replace(/[^a-z0-9_]/g, '_');
  if (alias === '' || /^[0-9]/.test(alias)) alias = `_${alias}`;
  if (PYTHON_KEYWORDS.has(alias)) alias = `${alias}_`;
  return alias;
}

/** Aliases for a list of names, in input order; the second "a-b" after "a_b" gets "a_b_2". */
export function uniqueAliases(names: readonly string[]): string[] {
  const taken = new Set<string>();
  return names.map((name) => {
    const base = pythonName(name);
    let alias = base;
    for (let n = 2; taken.has(alias); n++) alias = `${base}_${n}`;
    taken.add(alias);
    return alias;
  });
}
