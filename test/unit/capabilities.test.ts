import { describe, expect, it } from 'vitest';
import { applySelection, completeSelection, emptyCandidates } from '../../workflows/environment/capability-diff.js';
import type { Capabilities } from '../../contract/state.js';

const cap = (id: string) => ({ id, name: id.toUpperCase(), source: `catalog/${id}` });
const current: Capabilities = {
  skills: [cap('research'), cap('markdown')],
  toolsets: [cap('web')],
  memories: [],
  revision: 3,
};

describe('applySelection', () => {
  it('applies the difference: added, removed and kept, and bumps the revision', () => {
    const candidates = {
      ...emptyCandidates(),
      skills: [{ ...cap('docx'), score: 2 }],
      toolsets: [{ ...cap('convert'), score: 1 }],
    };
    const result = applySelection(current, candidates, {
      skills: ['markdown', 'docx'],
      toolsets: ['convert'],
      memories: [],
    });
    expect(result.diff).toEqual({
      added: ['skill:docx', 'toolset:convert'],
      removed: ['skill:research', 'toolset:web'],
      kept: ['skill:markdown'],
    });
    expect(result.next.skills.map((c) => c.id)).toEqual(['markdown', 'docx']);
    expect(result.next.revision).toBe(4);
    expect(result.dropped).toEqual([]);
  });

  it('drops ids that are neither candidates nor current, and records them', () => {
    const result = applySelection(current, emptyCandidates(), {
      skills: ['research', 'invented'],
      toolsets: ['web'],
      memories: ['m9'],
    });
    expect(result.dropped).toEqual(['skill:invented', 'memory:m9']);
    expect(result.next.skills.map((c) => c.id)).toEqual(['research']);
  });

  it('keeps the revision when nothing changed', () => {
    const result = applySelection(current, emptyCandidates(), {
      skills: ['research', 'markdown', 'research'],
      toolsets: ['web'],
      memories: [],
    });
    expect(result.next.revision).toBe(3);
    expect(result.diff.added).toEqual([]);
    expect(result.diff.removed).toEqual([]);
  });

  it('does not mutate the current capabilities', () => {
    const before = JSON.stringify(current);
    applySelection(current, emptyCandidates(), { skills: [], toolsets: [], memories: [] });
    expect(JSON.stringify(current)).toBe(before);
  });
});

describe('completeSelection', () => {
  it('keeps the current capabilities of a kind the orchestrator left out', () => {
    expect(completeSelection({ skills: ['docx'] }, current)).toEqual({
      skills: ['docx'],
      toolsets: ['web'],
      memories: [],
    });
  });
});
