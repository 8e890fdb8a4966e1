/**
 * Argument parsers for commander's `Option.argParser`: a bad value fails while parsing, with the
 * option named, before any command connects anywhere. Values from the environment (`.env()`) go
 * through the same parsers.
 */
import { InvalidArgumentError } from 'commander';
import ms from 'ms';

/** A whole number ≥ 1, e.g. `--limit`. */
export function positiveInt(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isInteger(n) || n < 1)
    throw new InvalidArgumentError('must be a positive integer');
  return n;
}

/** A whole number ≥ 0, e.g. `--since`. */
export function nonNegativeInt(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isInteger(n) || n < 0) {
    throw new InvalidArgumentError('must be a non-negative integer');
  }
  return n;
}

/** A number in [0, 1], e.g. a threshold. */
export function unitInterval(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0 || n > 1) {
    throw new InvalidArgumentError('must be a number between 0 and 1');
  }
  return n;
}

/**
 * A parser for a positive duration in milliseconds: `90s`, `2m`, `1.5h`, `500ms` (any unit `ms`
 * knows). A bare number is taken in `bareUnit`, so options that took plain seconds or milliseconds
 * before keep meaning what they meant.
 */
export function duration(bareUnit: 's' | 'ms'): (value: string) => number {
  return (value: string) => {
    const text = value.trim();
    const bare = /^\d+(\.\d+)?$/.test(text);
    // ms's types admit only well-formed strings; it returns undefined (checked below) for the rest.
    const millis = bare ? Number(text) * (bareUnit === 's' ? 1000 : 1) : ms(text as ms.StringValue);
    if (typeof millis !== 'number' || !Number.isFinite(millis) || millis <= 0) {
      throw new InvalidArgumentError(
        `must be a positive duration such as 90s or 2m (a bare number is ${bareUnit === 's' ? 'seconds' : 'milliseconds'})`,
      );
    }
    return Math.round(millis);
  };
}

/** Collects a repeatable option into a list. */
export function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}
