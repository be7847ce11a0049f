// Terraform type constraints: a parser for the written form and the rule of whether a declared
// type accepts every value of the contract's type (reference-contract.md §5.4).

export type TypeExpr =
  | { readonly kind: "string" | "number" | "bool" | "any" }
  | { readonly kind: "list" | "set" | "map"; readonly element: TypeExpr }
  | { readonly kind: "tuple"; readonly elements: readonly TypeExpr[] }
  | { readonly kind: "object"; readonly attributes: ReadonlyMap<string, { type: TypeExpr; optional: boolean }> };

export class TypeSyntaxError extends Error {}

/** Splits a type expression into names, brackets, separators and whole quoted strings. */
function tokenize(source: string): string[] {
  const tokens: string[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if ("(){}[]=,:".includes(c)) {
      tokens.push(c);
      i++;
    } else if (c === '"') {
      // A quoted default may hold brackets; it stays one token.
      let j = i + 1;
      while (j < source.length && source[j] !== '"') j += source[j] === "\\" ? 2 : 1;
      tokens.push(source.slice(i, j + 1));
      i = j + 1;
    } else if (c === "#" || (c === "/" && source[i + 1] === "/")) {
      while (i < source.length && source[i] !== "\n") i++;
    } else {
      let j = i;
      while (j < source.length && !/[\s(){}[\]=,:"]/.test(source[j]!)) j++;
      tokens.push(source.slice(i, j));
      i = j;
    }
  }
  return tokens;
}

/** Parses a written type constraint (`list(object({a = optional(string, "x")}))`); throws {@link TypeSyntaxError}. */
export function parseType(source: string): TypeExpr {
  const tokens = tokenize(source);
  let pos = 0;
  const next = (): string => tokens[pos++] ?? "";
  const peek = (): string => tokens[pos] ?? "";
  const expect = (token: string): void => {
    const got = next();
    if (got !== token)
      throw new TypeSyntaxError(
        got ? `expected ${JSON.stringify(token)}, found ${JSON.stringify(got)}` : `expected ${JSON.stringify(token)} at the end`,
      );
  };
  const skipDefault = (): void => {
    // Skips an optional() default up to the closing parenthesis at this depth.
    let depth = 0;
    for (;;) {
      const t = next();
      if (t === "") throw new TypeSyntaxError("unterminated optional()");
      if ("({[".includes(t) && t.length === 1) depth++;
      else if (")}]".includes(t) && t.length === 1) {
        if (depth === 0 && t === ")") return;
        depth--;
      }
    }
  };
  const type = (): TypeExpr => {
    const name = next();
    switch (name) {
      case "string":
      case "number":
      case "bool":
      case "any":
        return { kind: name };
      case "list":
      case "set":
      case "map": {
        expect("(");
        const element = type();
        expect(")");
        return { kind: name, element };
      }
      case "tuple": {
        expect("(");
        expect("[");
        const elements: TypeExpr[] = [];
        while (peek() !== "]") {
          if (peek() === "") throw new TypeSyntaxError("unterminated tuple");
          elements.push(type());
          if (peek() === ",") next();
        }
        next();
        expect(")");
        return { kind: "tuple", elements };
      }
      case "object": {
        expect("(");
        expect("{");
        const attributes = new Map<string, { type: TypeExpr; optional: boolean }>();
        while (peek() !== "}") {
          const key = next().replace(/^"(.*)"$/, "$1");
          if (key === "") throw new TypeSyntaxError("unterminated object");
          const separator = next();
          if (separator !== "=" && separator !== ":") throw new TypeSyntaxError(`expected "=" after attribute ${key}`);
          if (peek() === "optional") {
            next();
            expect("(");
            const inner = type();
            if (peek() === ",") {
              next();
              skipDefault();
            } else expect(")");
            attributes.set(key, { type: inner, optional: true });
          } else {
            attributes.set(key, { type: type(), optional: false });
          }
          if (peek() === ",") next();
        }
        next();
        expect(")");
        return { kind: "object", attributes };
      }
      default:
        throw new TypeSyntaxError(name ? `unknown type ${JSON.stringify(name)}` : "empty type");
    }
  };
  const result = type();
  if (pos !== tokens.length) throw new TypeSyntaxError(`unexpected ${JSON.stringify(tokens[pos])} after the type`);
  return result;
}

const sequenceKinds = new Set(["list", "set", "tuple"]);

/**
 * Whether a variable declared `declared` accepts every value of type `given`: `any` on either side
 * matches; lists, sets and tuples convert element-wise, but a declared tuple only takes a tuple of
 * the same length; maps element-wise; a declared object's attributes must be given (compatibly) or
 * be optional, extra given attributes are dropped; primitives only match themselves.
 */
export function accepts(declared: TypeExpr, given: TypeExpr): boolean {
  if (declared.kind === "any" || given.kind === "any") return true;
  if (sequenceKinds.has(declared.kind) && sequenceKinds.has(given.kind)) {
    if (declared.kind === "tuple") {
      return (
        given.kind === "tuple" &&
        given.elements.length === declared.elements.length &&
        declared.elements.every((d, i) => accepts(d, given.elements[i]!))
      );
    }
    const element = (declared as { element: TypeExpr }).element;
    if (given.kind === "tuple") return given.elements.every((g) => accepts(element, g));
    return accepts(element, (given as { element: TypeExpr }).element);
  }
  if (declared.kind !== given.kind) return false;
  if (declared.kind === "map" && given.kind === "map") return accepts(declared.element, given.element);
  if (declared.kind === "object" && given.kind === "object") {
    for (const [name, attribute] of declared.attributes) {
      const other = given.attributes.get(name);
      if (!other) {
        if (!attribute.optional) return false;
      } else if (!accepts(attribute.type, other.type)) return false;
    }
  }
  return true;
}
