import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { LOCAL_AGENT_SKIPPED, LocalModels } from '../../models/local-models.js';
import { orchestrateLocally } from '../../models/local/orchestrate.js';
import { RELATED_COSINE, judgeByRules, scoreRelevance } from '../../models/local/relevance.js';
import { wordCosine } from '../../models/local/vectors.js';
import { analyse, contentTerms, sentences } from '../../models/local/text.js';
import type { AlignedTask, OrchestrateRequest } from '../../contract/activity-contract.js';
import type { Band } from '../../contract/relevance.js';
import { decide } from '../../workflows/understanding/decide.js';
import type { Decision } from '../../contract/state.js';

const thresholds = { high: 0.65, low: 0.35 };
const call = { timeoutMs: 1_000 };
const models = new LocalModels();

async function judge(message: string, phaseGoal: string, sessionGoal = phaseGoal) {
  const scores = await models.relevance({ message: { text: message, resources: [] }, phaseGoal, sessionGoal }, call);
  const outcome = decide({ firstTask: false, relevance: { ok: true, scores }, thresholds });
  return { scores, decision: outcome.decision, bands: outcome.bands as { phase: Band; session: Band } };
}

/** The task-control loop's goal handling, as the workflow does it: initialize, then new-phase moves the phase goal. */
async function converse(messages: string[]): Promise<Array<{ decision: Decision; phase: string; session: string }>> {
  let goals: { session: string; phase: string } | undefined;
  const out: Array<{ decision: Decision; phase: string; session: string }> = [];
  for (const text of messages) {
    if (!goals) {
      goals = { session: text, phase: text };
      out.push({ decision: decide({ firstTask: true, thresholds }).decision, ...goals });
      continue;
    }
    const { decision } = await judge(text, goals.phase, goals.session);
    if (decision === 'new-phase') goals = { ...goals, phase: text };
    out.push({ decision, ...goals });
  }
  return out;
}

describe('the source article with no API key', () => {
  const GOAL = 'Research ComfyUI and deliver a Markdown guide';
  const WORD = 'Convert the Markdown we just created to Word';
  const WEATHER = "Also check tomorrow's weather";

  it('initializes, continues, starts the Word phase, and keeps the weather out of scope', async () => {
    const steps = await converse([GOAL, 'Continue', WORD, WEATHER]);
    expect(steps.map((s) => s.decision)).toEqual(['initialize', 'continue', 'new-phase', 'out-of-scope']);
    expect(steps[2]).toMatchObject({ phase: WORD, session: GOAL });
    expect(steps[3]).toMatchObject({ phase: WORD, session: GOAL });
  });

  it('bands the Word message phase-low and session-high while phase and session goals are the same text', async () => {
    const word = await judge(WORD, GOAL);
    expect(word.bands).toEqual({ phase: 'low', session: 'high' });
    const weather = await judge(WEATHER, GOAL);
    expect(weather.bands).toEqual({ phase: 'low', session: 'low' });
    expect(['continue', 'uncertain']).toContain((await judge('Continue', GOAL)).decision);
  });

  it('after the new phase, the weather is still out of scope and "Continue" continues the Word phase', async () => {
    expect((await judge(WEATHER, WORD, GOAL)).decision).toBe('out-of-scope');
    expect((await judge('Continue', WORD, GOAL)).decision).toBe('continue');
  });

  it('does the same in Chinese', async () => {
    const steps = await converse([
      '研究 ComfyUI 并交付一份 Markdown 指南',
      '继续',
      '把刚刚生成的 Markdown 转成 Word',
      '顺便查一下明天的天气',
    ]);
    expect(steps.map((s) => s.decision)).toEqual(['initialize', 'continue', 'new-phase', 'out-of-scope']);
    expect(steps[3]?.session).toBe('研究 ComfyUI 并交付一份 Markdown 指南');
  });
});

describe('messages too short to judge', () => {
  it.each(['okay', 'yes please', 'go ahead', 'keep going', '可以', '好的，继续', '嗯嗯'])(
    'reads the bare acknowledgement %j as continuing the current phase',
    (message) => {
      const result = scoreRelevance({ message, phaseGoal: 'Plan a team offsite', sessionGoal: 'Plan a team offsite' });
      expect(result.rule).toBe('acknowledgement');
      expect(result.phaseRelevance).toBeGreaterThanOrEqual(thresholds.high);
      expect(result.sessionRelevance).toBeGreaterThanOrEqual(thresholds.high);
    },
  );

  it.each(['hmm', 'wait', 'and?', 'ok so?', 'same as before', '嗯', '然后呢？'])(
    'puts %j, which has nothing to act on, in the uncertain band',
    async (message) => {
      const result = scoreRelevance({ message, phaseGoal: 'Plan a team offsite', sessionGoal: 'Plan a team offsite' });
      expect(result.rule).toBe('too-vague');
      expect((await judge(message, 'Plan a team offsite')).decision).toBe('uncertain');
    },
  );

  it('treats elliptical questions as uncertain, but not complete questions', () => {
    expect(
      scoreRelevance({ message: 'the blue one?', phaseGoal: 'Pick a palette', sessionGoal: 'Pick a palette' }).rule,
    ).toBe('elliptical-question');
    expect(scoreRelevance({ message: '那个方案呢？', phaseGoal: '规划行程', sessionGoal: '规划行程' }).rule).toBe(
      'elliptical-question',
    );
    expect(
      scoreRelevance({
        message: "What's the exchange rate of the yen?",
        phaseGoal: 'Pick a palette',
        sessionGoal: 'Pick a palette',
      }).rule,
    ).toBe('unrelated-request');
  });
});

describe('same topic, different step or deliverable', () => {
  const GUIDE = 'Write an onboarding guide for new support agents';
  const ZH_GUIDE = '编写新客服的入职指南';

  it.each([
    ['Export the guide as a PDF', 'new-phase'],
    ['Now write the FAQ for it', 'new-phase'],
    ['Translate the guide into German', 'new-phase'],
    ['Add a troubleshooting section to the guide', 'continue'],
    ['Keep each chapter under two pages', 'continue'],
    ['Continue with the escalation chapter', 'continue'],
    ['No, I meant the chat agents, not the phone team', 'continue'],
  ])('English: %j -> %s', async (message, expected) => {
    expect((await judge(message, GUIDE)).decision).toBe(expected);
  });

  it.each([
    ['把指南导出成 PDF', 'new-phase'],
    ['接下来写一份培训测验', 'new-phase'],
    ['指南写完了，然后做几页幻灯片', 'new-phase'],
    ['指南里补充一节常见问题', 'continue'],
    ['语气再正式一点', 'continue'],
    ['不对，我说的是在线客服', 'continue'],
  ])('Chinese: %j -> %s', async (message, expected) => {
    expect((await judge(message, ZH_GUIDE)).decision).toBe(expected);
  });

  it('reads a product the Session cannot be linked to as leaving the phase, without guessing where to', async () => {
    // No link to the Session: the rules put the phase band low and the session band uncertain, and
    // the decision keeps state (uncertain) rather than start a new phase or route the message away.
    const result = await judge('Write a haiku about spring', GUIDE);
    expect(result.bands).toEqual({ phase: 'low', session: 'uncertain' });
    expect(result.decision).toBe('uncertain');
    expect(
      scoreRelevance({ message: 'Write a haiku about spring', phaseGoal: GUIDE, sessionGoal: GUIDE }).rules,
    ).toEqual({
      phaseRelevance: 0.233,
      sessionRelevance: 0.5,
    });
  });
});

describe('another responsibility and conflicts', () => {
  it.each([
    ['Can you also book my flight to Paris?', 'Write an onboarding guide for new support agents'],
    ['By the way, which phone should I buy?', 'Write an onboarding guide for new support agents'],
    ['顺便帮我订个外卖', '编写新客服的入职指南'],
    ['另外查一下明天的股市', '编写新客服的入职指南'],
  ])('puts %j out of scope', async (message, goal) => {
    expect((await judge(message, goal)).decision).toBe('out-of-scope');
  });

  it('keeps a request about the user that refers to the work in scope', async () => {
    const goal = 'Write an onboarding guide for new support agents';
    expect((await judge('Turn the guide into slides for my manager', goal)).decision).toBe('new-phase');
  });

  it.each([
    [
      'Include the unverified invoices too, nobody will notice',
      'Reconcile the March invoices',
      'Audit the books using verified invoices only',
    ],
    [
      'Skip the tests this time, ship it anyway',
      'Write the release build',
      'Ship release 4.2 only after every test passes',
    ],
    [
      "Latency doesn't matter, use the cheapest region",
      'Choose the hosting region',
      'Host the API with latency under 50 ms',
    ],
    ['告警直接用商业版的吧', '选择告警组件', '只使用开源组件搭建监控系统'],
    ['报表里用未经核实的数字', '整理营收报表', '基于经核实的数据编写季度报告'],
  ])('reads %j as a conflict with a stated constraint', async (message, phase, session) => {
    const result = await judge(message, phase, session);
    expect(result.decision).toBe('conflict');
    expect(result.bands).toEqual({ phase: 'high', session: 'low' });
  });

  it('does not see a conflict where the session goal states no constraint', async () => {
    expect(
      (await judge('Use tabs instead of spaces', 'Write the parser', 'Build a JSON parser in Rust')).decision,
    ).toBe('continue');
  });
});

describe('scores', () => {
  it("grow with similarity inside a rule (the rules' own scores, an input of the trained model)", () => {
    const goal = 'Write the revenue section of the board report';
    const close = judgeByRules({ message: 'Shorten the revenue section', phaseGoal: goal, sessionGoal: goal });
    const far = judgeByRules({ message: 'Shorten it', phaseGoal: goal, sessionGoal: goal });
    expect(close.rule).toBe('refinement');
    expect(far.rule).toBe('refinement');
    expect(close.phaseRelevance).toBeGreaterThan(far.phaseRelevance);
  });

  it('stay in [0, 1] and are deterministic', () => {
    const goal = 'Write the revenue section of the board report';
    for (const message of ['Shorten the revenue section', 'Shorten it', 'hmm', 'Also book my flight']) {
      const s = scoreRelevance({ message, phaseGoal: goal, sessionGoal: goal });
      expect(scoreRelevance({ message, phaseGoal: goal, sessionGoal: goal })).toEqual(s);
      for (const x of [s.phaseRelevance, s.sessionRelevance]) {
        expect(x).toBeGreaterThanOrEqual(0);
        expect(x).toBeLessThanOrEqual(1);
      }
    }
  });
});

describe('text analysis', () => {
  it('stems English and drops stop words', () => {
    expect(contentTerms(analyse('Converting the slides into reports'))).toEqual(['convert', 'slide', 'report']);
  });

  it('segments Chinese with jieba and stems the Latin words inside it', () => {
    const analysis = analyse('把刚刚生成的 Markdown 转成 Word');
    expect(analysis.lang).toBe('zh');
    expect(analysis.tokens.map((t) => t.text)).toEqual(expect.arrayContaining(['刚刚', '生成', 'Markdown', 'Word']));
    expect(contentTerms(analysis)).toEqual(expect.arrayContaining(['生成', 'markdown', 'word']));
    expect(analyse('那个呢？').question).toBe(true);
  });

  it('splits English and Chinese sentences', () => {
    expect(sentences('The draft is done. Send it to Ana! 报告写完了。明天发给老板')).toEqual([
      'The draft is done.',
      'Send it to Ana!',
      '报告写完了。',
      '明天发给老板',
    ]);
  });
});

describe('extraction', () => {
  const task = (message: string, phaseGoal: string, sessionGoal: string): AlignedTask => ({
    message,
    phaseGoal,
    sessionGoal,
    resources: [],
  });

  it('extracts the terms of the new step first and drops discourse words', async () => {
    const word = 'Convert the Markdown we just created to Word';
    const { terms } = await models.extract(
      { task: task(word, word, 'Research ComfyUI and deliver a Markdown guide') },
      call,
    );
    expect(terms.slice(0, 2)).toEqual(['markdown', 'word']);
    expect(terms).toContain('convert');
    expect(terms).not.toContain('we');
    expect(terms).not.toContain('just');
  });

  it('extracts Chinese keywords with jieba TF-IDF', async () => {
    const message = '接下来把周报做成一页 PPT 给老板看';
    const { terms } = await models.extract({ task: task(message, message, '撰写第 42 周的项目周报') }, call);
    expect(terms).toEqual(expect.arrayContaining(['ppt', '周报']));
    expect(terms).not.toContain('接下来');
  });

  it('is deterministic and bounded', async () => {
    const long = task('alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron', 'x', 'y');
    const a = await models.extract({ task: long }, call);
    expect(a.terms.length).toBeLessThanOrEqual(12);
    expect(await models.extract({ task: long }, call)).toEqual(a);
  });
});

describe('orchestration', () => {
  const cap = (id: string, name: string) => ({ id, name, source: 'test' });
  const candidate = (id: string, name: string, score: number) => ({ ...cap(id, name), score });
  const wordTask: AlignedTask = {
    sessionGoal: 'Research ComfyUI and deliver a Markdown guide',
    phaseGoal: 'Convert the Markdown we just created to Word',
    message: 'Convert the Markdown we just created to Word',
    resources: [],
  };

  it('selects candidates scoring at least half the best of their kind, at most three', () => {
    const request: OrchestrateRequest = {
      task: wordTask,
      mode: 'init',
      current: { skills: [], toolsets: [], memories: [] },
      candidates: {
        skills: [
          candidate('b', 'B', 40),
          candidate('a', 'A', 100),
          candidate('c', 'C', 55),
          candidate('d', 'D', 50),
          candidate('e', 'E', 49),
        ],
        toolsets: [candidate('t', 'T', 3)],
        memories: [],
      },
    };
    expect(orchestrateLocally(request)).toEqual({ skills: ['a', 'c', 'd'], toolsets: ['t'], memories: [] });
  });

  it('in reconcile mode keeps current capabilities that still fit the new step and drops the rest', async () => {
    const selection = await models.orchestrate(
      {
        task: wordTask,
        mode: 'reconcile',
        current: {
          skills: [cap('markdown-guide', 'Markdown guide writing'), cap('technical-research', 'Technical research')],
          toolsets: [cap('comfyui', 'ComfyUI'), cap('workspace-files', 'Workspace files')],
          memories: [],
        },
        candidates: {
          skills: [candidate('markdown-to-docx', 'Markdown to Word', 64), candidate('pdf-export', 'PDF export', 20)],
          toolsets: [
            candidate('doc-convert', 'Document conversion', 50),
            candidate('workspace-files', 'Workspace files', 30),
          ],
          memories: [],
        },
      },
      call,
    );
    expect(selection).toEqual({
      skills: ['markdown-guide', 'markdown-to-docx'],
      toolsets: ['workspace-files', 'doc-convert'],
      memories: [],
    });
  });
});

describe('compaction', () => {
  it('returns an extractive summary: input sentences only, acknowledgements never', async () => {
    const inputs = [
      'Research ComfyUI and deliver a Markdown guide',
      'Continue',
      'Add a section on installing custom nodes to the guide. Mention that custom nodes live in the custom_nodes folder.',
      'ok',
      'Actually, target Macs with Apple Silicon, not Windows',
    ];
    const { summary } = await models.compact({ phaseGoal: inputs[0] ?? '', inputs }, call);
    const all = inputs.flatMap((i) => sentences(i));
    const picked = all.filter((s) => summary.includes(s));
    expect(picked.length).toBeGreaterThan(0);
    expect(summary).not.toMatch(/\bContinue\b|\bok\b/);
    expect(summary.replace(/\s+/g, '')).toBe(picked.join('').replace(/\s+/g, ''));
  });

  it('stays within its word budget', async () => {
    const inputs = Array.from(
      { length: 30 },
      (_, i) => `Sentence ${i} covers the pricing table for region ${i} in detail.`,
    );
    const small = new LocalModels({ summary: { maxWords: 25, maxSentences: 10 } });
    const { summary } = await small.compact({ phaseGoal: 'Compare regional pricing tables', inputs }, call);
    expect(summary.split(/\s+/).length).toBeLessThanOrEqual(25);
  });

  it('summarises Chinese inputs', async () => {
    const { summary } = await models.compact(
      {
        phaseGoal: '撰写第 42 周的项目周报',
        inputs: ['撰写第 42 周的项目周报', '好的', '风险那部分写短一点。截止日期其实是周五。'],
      },
      call,
    );
    expect(summary).toContain('风险那部分写短一点。');
    expect(summary).not.toContain('好的');
  });

  it('refuses to invent a summary of acknowledgements only', async () => {
    const failure = await models.compact({ phaseGoal: 'x', inputs: ['ok', 'continue'] }, call).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({ type: 'ModelInvalidOutput', nonRetryable: true });
  });
});

describe('the local agent role', () => {
  it('never writes a reply and says how to get one', async () => {
    const result = await models.agentStep(
      {
        sessionId: 's',
        goals: { session: 'g', phase: 'g' },
        decision: 'continue',
        summaries: [],
        transcript: [{ kind: 'user', seq: 1, text: 'hi', resources: [] }],
        skills: [],
        memories: [],
        tools: [],
        step: 1,
      },
      call,
    );
    expect(result).toEqual({ kind: 'skipped', reason: LOCAL_AGENT_SKIPPED });
    expect(LOCAL_AGENT_SKIPPED).toMatch(/OPENAI_API_KEY/);
  });

  it('describes each role for the start-up log', () => {
    const described = models.describe();
    expect(described.relevance).toBe('local/rules-conflict-check-v4');
    expect(Object.values(described).every((d) => d.startsWith('local/') || d.startsWith('none'))).toBe(true);
  });
});

describe('conflicts with what the goals chose or require', () => {
  const MD = 'Research ComfyUI and deliver a Markdown guide';

  it('sees a negated format, in English and Chinese, but not a conversion to another one', async () => {
    expect((await judge("Actually, don't use Markdown at all", MD)).decision).toBe('conflict');
    expect((await judge('别用 Markdown 了，直接写成纯文本', MD)).decision).toBe('conflict');
    expect((await judge('Convert the Markdown we just created to Word', MD)).decision).toBe('new-phase');
  });

  it('sees a sibling put in place of the chosen technology, and a language swapped across languages', async () => {
    const pg = 'Migrate the billing service from MySQL to PostgreSQL';
    expect(
      (await judge("Let's just use MongoDB for the invoices instead", 'Write the migration scripts', pg)).decision,
    ).toBe('conflict');
    expect((await judge('用中文写吧，不要英文', 'Write the README for our CLI tool in English')).decision).toBe(
      'conflict',
    );
    // "instead" alone, with nothing the goal chose being replaced, is a refinement.
    expect(
      (await judge('Scrape every 15 seconds instead of every minute', 'Set up Prometheus monitoring')).decision,
    ).toBe('continue');
  });

  it('sees what a stated constraint rules out, and what a goal prohibits', async () => {
    const trip = 'Plan a vegetarian food trip to Lisbon';
    expect((await judge('Add a steakhouse dinner on day 3', 'Draft the itinerary', trip)).decision).toBe('conflict');
    expect((await judge('Add a pastry tasting on day 2', 'Draft the itinerary', trip)).decision).toBe('continue');
    const family = '安排一次三天的杭州亲子游，不坐飞机';
    expect((await judge('改成坐飞机过去吧', family)).decision).toBe('conflict');
    expect(
      (await judge('把一半的钱放到比特币里', '整理资产配置建议', '制定稳健的家庭理财方案，只投低风险产品')).decision,
    ).toBe('conflict');
  });
});

describe('meaning beyond shared words', () => {
  it('links a message in one language to goals in the other through shared concepts', () => {
    const goal = 'Write a beginner guide to Docker in Markdown';
    const judged = scoreRelevance({ message: '指南里再加一节讲 volumes', phaseGoal: goal, sessionGoal: goal });
    expect(judged.rule).toBe('refinement');
    expect(judged.cues).toContain('doc:guide');
  });

  it('links a new deliverable of the goals domain to the Session', async () => {
    const lesson = 'Prepare an introductory Python lesson for high-school students';
    const quiz = await judge('Also make a quiz with 10 questions', lesson);
    // Session fit is high; "also" + a part-like deliverable splits the model between refining the
    // lesson and a new deliverable, so it may ask (uncertain) rather than move the phase.
    expect(quiz.bands.session).toBe('high');
    expect(['new-phase', 'uncertain']).toContain(quiz.decision);
  });

  it('leans to uncertain rather than to a state change when the evidence is split', async () => {
    // An unmarked instruction about another line of work is not taken as a refinement.
    expect(
      (await judge('Set up Prometheus alerts for the checkout API', 'Write a wedding speech for my sister')).decision,
    ).toBe('uncertain');
  });

  it('finds related English words through the vectors, and knows which words it has none for', () => {
    expect(wordCosine('alert', 'monitoring')).toBeGreaterThan(RELATED_COSINE);
    expect(wordCosine('weather', 'guide')).toBeLessThan(RELATED_COSINE);
    expect(wordCosine('comfyui', 'guide')).toBeUndefined();
  });
});
