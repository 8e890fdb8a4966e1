/**
 * The discourse cues the local relevance scorer reads, as word lists. They are general English and
 * Chinese function words and phrases (acknowledgements, sequence markers, possessives, negations)
 * and general kinds of work products, never phrases taken from evaluation cases. Each list says
 * which rule in `relevance.ts` uses it. Matching is on tokens (see `findPhrases`), so a cue never
 * matches inside a longer word.
 */
import { stemOf, type Token } from './text.js';

/** A run of tokens that matched a cue: `[start, end)`. */
export interface Span {
  start: number;
  end: number;
  cue: string;
}

const HAN = /\p{Script=Han}/u;

/**
 * Where the phrases occur in `tokens`. A Latin phrase is a sequence of lowercase words (punctuation
 * included as its own word, e.g. "no ,"); a Chinese phrase matches a run of whole jieba tokens
 * whose text joins to it, so "下一步" matches 下 + 一步 but "对" never matches inside 对比.
 */
export function findPhrases(tokens: Token[], phrases: readonly string[]): Span[] {
  const spans: Span[] = [];
  for (const phrase of phrases) {
    if (HAN.test(phrase)) {
      for (let i = 0; i < tokens.length; i++) {
        let joined = '';
        for (let j = i; j < tokens.length && joined.length < phrase.length; j++) {
          joined += tokens[j]?.lower ?? '';
          if (joined === phrase) spans.push({ start: i, end: j + 1, cue: phrase });
        }
      }
      continue;
    }
    const words = phrase.split(' ');
    for (let i = 0; i + words.length <= tokens.length; i++) {
      if (words.every((w, k) => tokens[i + k]?.lower === w))
        spans.push({ start: i, end: i + words.length, cue: phrase });
    }
  }
  return spans.sort((a, b) => a.start - b.start || b.end - a.end);
}

/** Chinese resultative complements that jieba often fuses with their verb ("翻译成", "做好", "写上"). */
const ZH_RESULTATIVE = /[成为出好上完]$/u;

/**
 * Matches on stems for English words (so "slides" finds "slide") and on words for Chinese, where a
 * verb fused with its resultative complement still matches the verb ("翻译成" finds "翻译").
 */
export class TermSet {
  private readonly terms: Set<string>;
  constructor(readonly words: readonly string[]) {
    this.terms = new Set(words.map((w) => (HAN.test(w) ? w : stemOf(w))));
  }
  has(token: Token): boolean {
    if (this.terms.has(token.term) || this.terms.has(token.lower)) return true;
    return token.script === 'han' && token.lower.length > 1 && ZH_RESULTATIVE.test(token.lower)
      ? this.terms.has(token.lower.slice(0, -1))
      : false;
  }
}

// ---- Messages too short to judge (rule 1) -------------------------------------------------------

/** Bare acknowledgements and requests to go on: with nothing else in the message they mean "proceed". */
export const ACKNOWLEDGEMENTS = new Set([
  ...['ok', 'okay', 'k', 'kk', 'yes', 'yeah', 'yep', 'yup', 'sure', 'fine', 'great', 'good', 'nice', 'cool'],
  ...['perfect', 'alright', 'right', 'thanks', 'thank', 'you', 'please', 'pls', 'continue', 'proceed', 'go'],
  ...['on', 'ahead', 'keep', 'going', 'carry', 'resume', 'sounds', 'looks', 'lgtm', 'agreed', 'approved'],
  ...['do', 'it', 'for'],
  ...['好', '好的', '好滴', '好嘞', '行', '可以', '嗯嗯', '对', '是', '是的', '没问题', '继续', '收到', '明白'],
  ...['谢谢', '请', '开始', '吧', '的', '了', '呀', '啊'],
]);

/** Hesitation and bare refusal: they say the user has not decided, so they never mean "proceed". */
export const HESITATIONS = new Set([
  ...['hmm', 'hm', 'hmmm', 'hmmmm', 'um', 'umm', 'uh', 'uhh', 'er', 'erm', 'eh', 'huh', 'well', 'wait', 'hold'],
  ...['maybe', 'perhaps', 'dunno', 'idk', 'unsure', 'no', 'nope', 'not'],
  ...['嗯', '呃', '额', '唔', '哦', '等等', '等一下', '等下', '不确定', '不知道', '不', '不是', '算了'],
]);

/**
 * Deictic and history words. They point at something the relevance role cannot see (it gets no
 * history), so on their own they carry no topic: "what about the other one?", "same as last time".
 */
export const VAGUE_REFERENCES = new Set([
  ...['other', 'another', 'others', 'one', 'ones', 'thing', 'things', 'stuff', 'same', 'usual', 'before'],
  ...['earlier', 'last', 'time', 'previous', 'old', 'older', 'that', 'this', 'those', 'these', 'about', 'what'],
  ...['那个', '这个', '另', '另一个', '一个', '另一版', '上次', '之前', '那', '这', '还有', '别的', '其他', '呢'],
]);

/** Acknowledgements, hesitations and deictic words: they never carry a topic. */
export function isDiscourseWord(token: Token): boolean {
  return ACKNOWLEDGEMENTS.has(token.lower) || HESITATIONS.has(token.lower) || VAGUE_REFERENCES.has(token.lower);
}

/** Verbs that may head a Chinese elliptical question without making it a request ("还有那个？"). */
export const NON_PREDICATE_VERBS = new Set(['有', '还有', '是', 'be', 'is', 'are', 'was', 'were']);

// ---- Step and deliverable changes (rule 5) -------------------------------------------------------

/** Sequence markers at the start of a clause: the previous step is over, a next one begins. */
export const STEP_MARKERS = [
  ...['now', 'next', 'then', 'afterwards', 'after that', 'after this', 'moving on', 'move on', 'finally'],
  ...['lastly', 'once that is done', "once that 's done", 'when that is done', "when that 's done", 'now that'],
  ...['接下来', '接着', '下一步', '然后', '之后', '随后', '再来', '最后', '下面'],
] as const;

/** Sequence adverbs that also work at the end of a clause ("check keyboard navigation next"). */
export const CLAUSE_FINAL_STEP_MARKERS = new Set(['next', 'then', 'afterwards', 'after that']);

/** First-person plural: a question about what "we" do is about the shared work, not the world. */
export const FIRST_PERSON_PLURAL = new Set(['we', 'us', 'our', '我们', '咱们']);

/** Phrases that report the current step as finished ("the tests are done", "写完了"). */
export const COMPLETION_PHRASES = [
  ...['is done', 'are done', 'is finished', 'are finished', 'is complete', "that 's done", 'done with'],
  ...['finished with', 'we are done', "we 're done"],
  ...['完成了', '搞定了', '结束了'],
] as const;

/**
 * Chinese resultative completion: a verb ending in 完 ("写完", "查完"), or one ending in 好/定 followed by
 * 了 or 后 ("修好了", "酒店定了", "登录页好了").
 */
export const ZH_DONE_SUFFIX = /完$/u;
export const ZH_SETTLED_SUFFIX = /(好|定)$/u;
export const ZH_PERFECTIVE = new Set(['了', '后', '之后']);

/** Leading words asking to go on with the current step, possibly with what to go on with. */
export const CONTINUATION_MARKERS = [
  ...['continue', 'keep going', 'keep on', 'carry on', 'go on', 'proceed', 'resume'],
  ...['继续'],
] as const;

/** Corrections of what the user said or meant: still the same step. */
export const CORRECTION_MARKERS = [
  ...['i meant', 'i mean', 'actually', 'correction', 'no ,', 'sorry ,', 'rather'],
  ...['不对', '其实', '我说的是', '我的意思是', '应该是', '更正', '搞错了', '说错了'],
] as const;

/**
 * Kinds of work product a step delivers: documents, formats, software artefacts. A message that
 * produces one the phase goal does not name starts a new deliverable.
 */
export const DELIVERABLES = new TermSet([
  ...['document', 'doc', 'docx', 'pdf', 'markdown', 'html', 'csv', 'excel', 'xlsx', 'spreadsheet', 'sheet'],
  ...['slide', 'deck', 'presentation', 'ppt', 'pptx', 'powerpoint', 'keynote', 'report', 'memo', 'summary'],
  ...['brief', 'briefing', 'email', 'newsletter', 'post', 'blog', 'tweet', 'thread', 'article', 'guide'],
  ...['tutorial', 'handbook', 'manual', 'faq', 'checklist', 'runbook', 'playbook', 'postmortem', 'test'],
  ...['pr', 'changelog', 'documentation', 'readme', 'dashboard', 'chart', 'graph', 'diagram', 'infographic'],
  ...['prototype', 'mockup', 'wireframe', 'script', 'model', 'itinerary', 'schedule', 'calendar', 'timeline'],
  ...['roadmap', 'quiz', 'exam', 'worksheet', 'rubric', 'exercise', 'lesson', 'syllabus', 'blurb', 'letter'],
  ...['reply', 'template', 'translation', 'proposal', 'contract', 'outline', 'agenda', 'minutes', 'spec'],
  ...['notes', 'survey', 'poster', 'logo', 'flyer', 'brochure', 'video', 'transcript', 'recommendation', 'plan'],
  ...['文档', '报告', '周报', '月报', '年报', '总结', '摘要', '纪要', '邮件', '文案', '文章', '清单', '列表'],
  ...['表', '表格', '汇总表', '报表', '图表', '幻灯片', '演示文稿', '课件', '单元测试', '测试', '测验', '试卷'],
  ...['习题', '原型', '方案', '计划', '日历', '行程', '攻略', '指南', '教程', '手册', '说明', '说明书', '脚本'],
  ...['模型', '海报', '请柬', '回复', '反馈', '复盘', '大纲', '教案', '问卷', '合同', '看板', '仪表盘', '流程图'],
]);

/** Format names that are also common words count only when written as a name ("Word", not "words"). */
export const PROPER_NAME_FORMATS = new Set(['Word', 'Pages', 'Notion', 'Confluence']);

/**
 * Parts of a work product. Adding or writing one ("a section on installing", "一节钓鱼邮件识别")
 * extends the deliverable in progress; it is not a new one.
 */
export const PART_NOUNS = new TermSet([
  ...['section', 'paragraph', 'chapter', 'page', 'sentence', 'line', 'bullet', 'example', 'question', 'item'],
  ...['step', 'part', 'heading', 'title', 'headline', 'intro', 'introduction', 'conclusion', 'appendix', 'table'],
  ...['row', 'column', 'field', 'feature', 'note', 'footnote', 'caption', 'screenshot', 'figure', 'exercise'],
  ...['段', '节', '章', '部分', '例子', '案例', '标题', '开头', '结尾', '附录', '一行', '一列', '字段', '步骤'],
  // An exercise or worked example is a part of a lesson; a whole worksheet (习题, 试卷) is a deliverable.
  ...['练习题', '例题', '应用题'],
]);

/** Verbs that create a new piece of work: with a new item as object ("write a haiku"), a new deliverable. */
export const CREATION_VERBS = new TermSet([
  ...['write', 'draft', 'create', 'build', 'compose', 'design', 'generate', 'produce', 'prepare', 'develop'],
  ...['写', '起草', '创建', '生成', '设计', '制作', '编写', '撰写', '做', '出'],
]);

/** Verbs that produce a work product. */
export const PRODUCTION_VERBS = new TermSet([
  ...['write', 'draft', 'create', 'make', 'build', 'produce', 'prepare', 'generate', 'compose', 'compile'],
  ...['design', 'develop', 'implement', 'set', 'open', 'put', 'turn', 'convert', 'export', 'translate'],
  ...['transform', 'render', 'publish', 'send', 'sketch', 'outline', 'record', 'train', 'draw', 'code'],
  ...['package', 'assemble', 'format', 'save', 'attach'],
  ...['写', '做', '出', '列', '整理', '生成', '制作', '起草', '撰写', '编写', '画', '设计', '搭', '建', '导出'],
  ...['做成', '提', '配', '训练', '建立', '准备', '拟', '发', '转', '改写', '翻译', '输出', '产出'],
]);

/** Translation always yields a new work product (the translated copy), whatever it is called. */
export const TRANSLATION_VERBS = new TermSet(['translate', 'localize', '翻译', '译成']);

/** Determiners and classifiers that introduce a new item ("a checklist", "三条文案", "一份报告"). */
export const NEW_ITEM_DETERMINERS = new Set([
  ...['a', 'an', 'one', 'two', 'three', 'four', 'five', 'some', 'another', 'several'],
]);
/** Chinese classifiers for documents and items; a numeral-classifier token ending in one introduces a new item. */
export const ZH_ITEM_CLASSIFIERS = /[份篇封页张条套版个]$/u;

// ---- Leaving the Session's responsibility (rules 2 and 3) ---------------------------------------

/** Additive requests: a further, separate matter ("also ...", "顺便 ..."). */
export const ADDITIVE_MARKERS = [
  ...['also', "while you 're at it", 'while you are at it', "while you 're", 'while you are', 'by the way'],
  ...['btw', 'additionally', 'on the side', 'one more thing', 'another thing'],
  ...['顺便', '顺手', '顺带', '另外', '此外', '对了', '还有'],
] as const;

/** First-person possessives and beneficiaries: the request is about the user's own affairs. */
export const PERSONAL_WORDS = new Set(['my', 'mine', 'myself', '我家', '家里', '私人', '个人']);
/** "me" is personal as a beneficiary ("book me a table"), not after verbs of communication ("tell me"). */
export const COMMUNICATION_VERBS = new Set([
  ...['tell', 'show', 'give', 'let', 'send', 'remind', 'ask', 'help', 'walk', 'explain', 'update', 'ping'],
  ...['email', 'message', 'keep', 'notify', 'call', 'text', 'get', 'lets'],
]);
/** Chinese: 我 right after these is a beneficiary ("帮我…"), and right before 的/家 a possessor ("我的…"). */
export const ZH_BENEFICIARY_VERBS = new Set(['帮', '给', '替', '为', '陪', '教']);
export const ZH_POSSESSIVE_AFTER_ME = new Set(['的', '家', '自己']);

/** Question words that open a question about the world rather than an instruction. */
export const WH_WORDS = new Set([
  ...['what', "what's", 'whats', 'which', 'where', 'when', 'who', 'whom', 'whose', 'why', 'how'],
  ...['什么', '哪', '哪儿', '哪里', '哪个', '哪家', '哪只', '为什么', '为啥', '怎么', '怎样', '怎么样', '多少', '几'],
]);

// ---- References to the Session's own work (anchoring) -------------------------------------------

/** Anaphora: pronouns that can only point at the work under way. */
export const WORK_PRONOUNS = new Set([
  ...['it', 'its', 'this', 'these', 'those', 'them', 'their', 'they'],
  ...['它', '它们', '这份', '这篇', '这些', '上面', '以上', '该', '这版', '此'],
]);
/** Phrases that point back at what the Session just produced. */
export const WORK_PHRASES = [
  ...['we just', 'you just', 'just created', 'just made', 'just wrote', 'so far', 'above', 'you made'],
  ...['you wrote', 'we made', 'we wrote', 'you produced', 'what we have', 'what you have', "what we 've"],
  ...["what you 've"],
  ...['刚刚', '刚才', '刚写', '刚做'],
] as const;
/**
 * Determiners that make a following goal noun a definite reference to the work ("the guide"). 把
 * fronts a definite, known object in Chinese ("把结果做成图表": the results already there).
 */
export const DEFINITE_DETERMINERS = new Set([
  ...['the', 'this', 'that', 'these', 'those', 'our', 'your'],
  ...['这', '这个', '该', '把'],
]);
/** Nouns that presuppose an original: "a slide deck version", "a Spanish copy", "英文版本". */
// Not "edition": its Porter stem is that of "editing".
export const WORK_LINK_NOUNS = new TermSet(['version', 'copy', 'variant', '版本', '副本']);
/** Generic names for what the work has produced so far; definite, they refer to the work ("the findings"). */
export const WORK_OUTPUTS = new TermSet([
  ...['result', 'findings', 'output', 'draft', 'conclusion', 'answer', 'changes', 'analysis', 'numbers'],
  ...['结果', '结论', '初稿', '草稿', '内容', '改动', '分析', '数据'],
]);

// ---- Conflict with a stated constraint (rule 4) ---------------------------------------------------

/** Words with which a session goal states a constraint ("audited figures only", "零投放预算"). */
export const CONSTRAINT_MARKERS = [
  ...['only', 'no', 'not', 'never', 'without', 'zero', 'non', 'under', 'below', 'max', 'maximum', 'at most'],
  ...['less than', 'avoid', 'except', 'exclusively', 'read-only', 'according to', 'policy', 'comply'],
  ...['compliance', 'meet', 'strictly', 'must', 'limit'],
  ...['仅', '只', '只能', '只用', '仅用', '只允许', '不', '不要', '不得', '不超过', '零', '无', '禁止', '避免'],
  ...['按', '按照'],
  ...['根据', '遵守', '符合', '必须', '限'],
] as const;

/** Prohibitions: the terms right after them are what the session goal rules out. */
export const PROHIBITION_MARKERS = new Set([
  ...['no', 'zero', 'without', 'never', 'non'],
  ...['不', '零', '无', '禁止', '不要', '不得', '别'],
]);

/** Overrides: the message sets aside how the work is supposed to be done. */
export const OVERRIDE_MARKERS = [
  ...['instead', 'anyway', 'anyways', 'regardless', 'ignore', 'bypass', 'skip the'],
  ...['直接', '改用', '换成', '干脆', '不管', '无视', '忽略'],
] as const;
/** "Just ..." opening an instruction is an override ("just restart it"); elsewhere "just" is temporal. */
export const CLAUSE_INITIAL_OVERRIDES = new Set(['just', '直接']);

/** Dismissals of a goal term ("contrast doesn't matter", "对比度无所谓"). */
export const DISMISSALS = [
  ...["does n't matter", 'does not matter', "do n't care", 'do not care', 'not important', 'who cares'],
  ...['never mind', 'forget about', 'no need for'],
  ...['无所谓', '不重要', '不用管', '别管', '不用考虑'],
] as const;

/** Rejections of a goal term ("we're dropping Postgres", "放弃 React"). */
export const REJECTION_VERBS = new TermSet([
  ...['drop', 'abandon', 'ditch', 'replace', 'scrap', 'remove', 'eliminate', 'cancel'],
  ...['放弃', '弃用', '去掉', '换掉', '取消', '砍掉'],
]);
export const REJECTION_PHRASES = [
  ...['instead of', 'get rid of', 'stop using', 'move off', 'switch from', 'away from'],
  ...['不再用'],
] as const;

/** Morphological negation of a goal term: "unaudited" negates "audited". */
export const NEGATING_PREFIXES = ['un', 'non', 'dis'] as const;
/** Chinese negators placed right before the negated term: "未经审计" negates "审计". */
export const ZH_NEGATORS = new Set(['未', '未经', '非', '无', '不', '没有', '没']);
