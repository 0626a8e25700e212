import { x } from "./x";

/** A greeter. */
export class Greeter {
  constructor(private name: string) {}
  greet(): string {
    return `hello ${this.name}`;
  }
}

export interface Named {
  name: string;
}

export const shout = (s: string): string => s.toUpperCase();

function helper(a: number): number {
  return a + 1;
}
