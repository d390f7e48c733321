/**
 * Where a JSON text goes wrong, said for people: line, column and what was expected.
 *
 * @module
 */

/** 1-based line and column of a UTF-16 offset. */
export function lineColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let start = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      start = i + 1;
    }
  }
  return { line, column: [...text.slice(start, offset)].length + 1 };
}

/**
 * Finds the first syntax error of a JSON text, with a message for people. `JSON.parse` says
 * where only in some Node versions and only as a character offset; this says it the same way
 * everywhere. Returns `null` when it finds nothing (or the nesting is too deep to look).
 */
export function jsonErrorAt(text: string): { offset: number; message: string } | null {
  const n = text.length;
  let i = 0;
  class Fail {
    constructor(readonly offset: number, readonly message: string) {}
  }
  const fail = (message: string, at = i): never => {
    throw new Fail(at, message);
  };
  const show = (): string => {
    if (i >= n) return 'the end of the file';
    const ch = String.fromCodePoint(text.codePointAt(i)!);
    return /^[\x21-\x7e]$/.test(ch) ? `'${ch}'` : JSON.stringify(ch);
  };
  const ws = (): void => {
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) i++;
      else break;
    }
  };
  const string = (): void => {
    const start = i;
    i++;
    for (;;) {
      if (i >= n) fail('unterminated string', start);
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        i++;
        return;
      }
      if (c === 0x5c) {
        const e = text[i + 1];
        if (e !== undefined && '"\\/bfnrt'.includes(e)) i += 2;
        else if (e === 'u' && /^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) i += 6;
        else fail('invalid escape in a string');
      } else if (c < 0x20) {
        fail('unescaped control character in a string (a raw newline or tab?)');
      } else {
        i++;
      }
    }
  };
  const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
  const value = (depth: number): void => {
    if (depth > 1000) throw new Error('too deep');
    ws();
    if (i >= n) fail('unexpected end of the file, expected a value');
    const c = text[i]!;
    if (c === '{') {
      i++;
      ws();
      if (text[i] === '}') {
        i++;
        return;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail(text[i] === '}' ? "trailing comma before '}'" : `expected a "quoted" property name, found ${show()}`);
        string();
        ws();
        if (text[i] !== ':') fail(`expected ':' after a property name, found ${show()}`);
        i++;
        value(depth + 1);
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === '}') {
          i++;
          return;
        }
        fail(`expected ',' or '}' after a property value, found ${show()}`);
      }
    }
    if (c === '[') {
      i++;
      ws();
      if (text[i] === ']') {
        i++;
        return;
      }
      for (;;) {
        ws();
        if (text[i] === ']') fail("trailing comma before ']'");
        value(depth + 1);
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === ']') {
          i++;
          return;
        }
        fail(`expected ',' or ']' after an array element, found ${show()}`);
      }
    }
    if (c === '"') return string();
    if (c === '-' || (c >= '0' && c <= '9')) {
      NUMBER.lastIndex = i;
      const m = NUMBER.exec(text);
      if (!m) fail('invalid number');
      i += m![0].length;
      return;
    }
    for (const literal of ['true', 'false', 'null']) {
      if (text.startsWith(literal, i)) {
        i += literal.length;
        return;
      }
    }
    fail(`unexpected ${show()}, expected a value`);
  };
  try {
    value(0);
    ws();
    if (i < n) fail(`unexpected ${show()} after the end of the JSON value`);
    return null;
  } catch (e) {
    if (e instanceof Fail) return { offset: e.offset, message: e.message };
    return null;
  }
}
