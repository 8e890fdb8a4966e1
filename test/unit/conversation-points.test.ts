/** The capacity conversation's measuring points and its late window (bench/conversation-scenario.ts). */
import { describe, expect, it } from 'vitest';
import { conversationPoints, lateFrom } from '../../bench/conversation-scenario.js';

describe('capacity conversation points', () => {
  it('measures after 2, 10, 50, every 100 and the last input', () => {
    expect(conversationPoints(12)).toEqual([2, 10, 12]);
    expect(conversationPoints(300)).toEqual([2, 10, 50, 100, 200, 300]);
    expect(conversationPoints(250)).toEqual([2, 10, 50, 100, 200, 250]);
  });

  it('starts the late window at the last point 200 or more inputs before the end, not before the 100th', () => {
    expect(lateFrom(conversationPoints(300))).toBe(100);
    expect(lateFrom(conversationPoints(500))).toBe(300);
    expect(lateFrom(conversationPoints(450))).toBe(200);
    // Too short for a 200-input window after the lists have had 100 inputs to fill.
    expect(lateFrom(conversationPoints(250))).toBeNull();
    expect(lateFrom(conversationPoints(12))).toBeNull();
  });
});
