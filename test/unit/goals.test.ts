import { describe, expect, it } from 'vitest';
import { STATEMENT_CHARS, refinedStatement, taskStatement, validStatement } from '../../contract/goals.js';

describe('taskStatement', () => {
  it('states no task for greetings, thanks and requests for help as such', () => {
    for (const text of [
      'Hi, can you help me?',
      'Hello!',
      'Hey there, could you help me with something?',
      'Thanks!',
      'ok',
    ])
      expect(taskStatement(text)).toBe('');
  });

  it('removes pleasantries and filler at both ends and capitalises the task', () => {
    expect(taskStatement('Please research ComfyUI and write a complete guide, thanks!')).toBe(
      'Research ComfyUI and write a complete guide',
    );
    expect(taskStatement('Hi there, could you please plan a trip to Kyoto?')).toBe('Plan a trip to Kyoto');
    expect(taskStatement('Can you convert report.md to Word?')).toBe('Convert report.md to Word');
    expect(taskStatement('Plan a trip to Kyoto')).toBe('Plan a trip to Kyoto');
  });

  it('is one line, clipped at a word to the statement length', () => {
    expect(taskStatement('I would like you to draft the release notes\nfor v2')).toBe('Draft the release notes for v2');
    const long = taskStatement(`Summarise ${'the quarterly figures '.repeat(20)}`);
    expect(long.length).toBeLessThanOrEqual(STATEMENT_CHARS);
    expect(long.endsWith('figures') || long.endsWith('quarterly') || long.endsWith('the')).toBe(true);
    expect(validStatement(long)).toBe(long);
  });

  it('is deterministic', () => {
    const text = 'Good morning! Please compare the three vendor offers, thank you';
    expect(taskStatement(text)).toBe(taskStatement(text));
    expect(taskStatement(text)).toBe('Compare the three vendor offers');
  });
});

describe('validStatement', () => {
  it('takes one trimmed line of up to STATEMENT_CHARS characters and nothing else', () => {
    expect(validStatement('  Write the guide  ')).toBe('Write the guide');
    expect(validStatement('Write\nthe guide')).toBeNull();
    expect(validStatement('x'.repeat(STATEMENT_CHARS + 1))).toBeNull();
    expect(validStatement('')).toBeNull();
    expect(validStatement(null)).toBeNull();
    expect(validStatement(42)).toBeNull();
  });
});

describe('refinedStatement', () => {
  it('folds the refinement into the phase goal, without its connective', () => {
    expect(refinedStatement('Plan a trip to Kyoto', 'Also keep it under $2000 please')).toBe(
      'Plan a trip to Kyoto; keep it under $2000',
    );
  });

  it('keeps the phase goal when the message adds nothing', () => {
    expect(refinedStatement('Plan a trip to Kyoto', 'Thanks!')).toBe('Plan a trip to Kyoto');
  });

  it('stays within the statement length', () => {
    expect(refinedStatement('A'.repeat(190), 'also add a section on budgets').length).toBeLessThanOrEqual(
      STATEMENT_CHARS,
    );
  });
});
