/**
 * A small bilingual concept lexicon: common task, format, technology, domain and constraint words
 * in English and Chinese mapped onto shared concept ids, so that "slides" and "幻灯片", "budget" and
 * "预算" count as the same thing on both sides of a comparison. There are no Chinese word vectors
 * in the npm registry small enough to load per call, and a goal in one language with a message in
 * the other shares no surface word at all; shared ids give the scorer a cross-lingual overlap.
 *
 * Entries are general vocabulary, never phrases copied from evaluation cases. Each concept has:
 * - `kind` when its siblings are alternatives to one another (formats, databases, languages,
 *   tools): naming a sibling in place of the goal's choice is a replacement (rule 4 in
 *   docs/relevance.md);
 * - `domain` when it belongs to a line of work, so that a new deliverable in the same domain as the
 *   goals ("a quiz" in a lesson) is linked to the Session;
 * - `violates` for a constraint concept: the concepts a goal that states it rules out ("vegetarian"
 *   rules out meat).
 */
import { type Token } from './text.js';

export interface Concept {
  id: string;
  en: readonly string[];
  zh: readonly string[];
  kind?: string;
  domain?: string;
  violates?: readonly string[];
}

const c = (id: string, en: string[], zh: string[], extra: Omit<Concept, 'id' | 'en' | 'zh'> = {}): Concept => ({
  id,
  en,
  zh,
  ...extra,
});

export const CONCEPTS: readonly Concept[] = [
  // Formats and document tools: alternatives to one another.
  c('fmt:markdown', ['markdown', 'md'], ['markdown'], { kind: 'format', domain: 'writing' }),
  c('fmt:word', ['word', 'docx'], ['word', 'docx'], { kind: 'format', domain: 'writing' }),
  c('fmt:pdf', ['pdf'], ['pdf'], { kind: 'format', domain: 'writing' }),
  c('fmt:html', ['html', 'web page', 'webpage'], ['html', '网页'], { kind: 'format' }),
  c('fmt:plain', ['plain text', 'txt'], ['纯文本', '文本格式'], { kind: 'format' }),
  c('fmt:latex', ['latex'], ['latex'], { kind: 'format' }),
  c(
    'fmt:slides',
    ['slides', 'slide', 'deck', 'powerpoint', 'ppt', 'keynote', 'presentation'],
    ['幻灯片', 'ppt', '演示文稿'],
    {
      domain: 'writing',
    },
  ),
  c('fmt:spreadsheet', ['spreadsheet', 'excel', 'xlsx', 'google sheets'], ['表格', 'excel', '电子表格'], {
    kind: 'tool',
    domain: 'data',
  }),
  c('fmt:json', ['json'], ['json'], { kind: 'format' }),
  c('fmt:csv', ['csv'], ['csv'], { kind: 'format' }),
  // Natural languages.
  c('lang:english', ['english'], ['英文', '英语'], { kind: 'language' }),
  c('lang:chinese', ['chinese', 'mandarin'], ['中文', '汉语', '普通话'], { kind: 'language' }),
  c('lang:spanish', ['spanish'], ['西班牙语', '西语'], { kind: 'language' }),
  c('lang:french', ['french'], ['法语', '法文'], { kind: 'language' }),
  c('lang:japanese', ['japanese'], ['日语', '日文'], { kind: 'language' }),
  c('lang:german', ['german'], ['德语', '德文'], { kind: 'language' }),
  // Programming languages and runtimes.
  c('pl:python', ['python', 'pandas'], ['python', 'pandas'], { kind: 'programming', domain: 'coding' }),
  c('pl:javascript', ['javascript', 'js', 'node', 'nodejs'], ['javascript', 'js'], {
    kind: 'programming',
    domain: 'coding',
  }),
  c('pl:typescript', ['typescript', 'ts'], ['typescript'], { kind: 'programming', domain: 'coding' }),
  c('pl:java', ['java'], ['java'], { kind: 'programming', domain: 'coding' }),
  c('pl:go', ['golang'], ['golang'], { kind: 'programming', domain: 'coding' }),
  c('pl:rust', ['rust'], ['rust'], { kind: 'programming', domain: 'coding' }),
  c('pl:r', ['rstats'], [], { kind: 'programming', domain: 'coding' }),
  // Databases.
  c('db:postgres', ['postgresql', 'postgres', 'pg'], ['postgresql', 'postgres'], {
    kind: 'database',
    domain: 'coding',
  }),
  c('db:mysql', ['mysql', 'mariadb'], ['mysql'], { kind: 'database', domain: 'coding' }),
  c('db:mongodb', ['mongodb', 'mongo'], ['mongodb', 'mongo'], { kind: 'database', domain: 'coding' }),
  c('db:sqlite', ['sqlite'], ['sqlite'], { kind: 'database', domain: 'coding' }),
  c('db:redis', ['redis'], ['redis'], { kind: 'database', domain: 'coding' }),
  c('db:oracle', ['oracle'], ['oracle'], { kind: 'database', domain: 'coding' }),
  c('db:dynamodb', ['dynamodb'], ['dynamodb'], { kind: 'database', domain: 'coding' }),
  // Frameworks, platforms and tools.
  c('fw:react', ['react'], ['react'], { kind: 'frontend', domain: 'coding' }),
  c('fw:vue', ['vue'], ['vue'], { kind: 'frontend', domain: 'coding' }),
  c('fw:angular', ['angular'], ['angular'], { kind: 'frontend', domain: 'coding' }),
  c('fw:svelte', ['svelte'], ['svelte'], { kind: 'frontend', domain: 'coding' }),
  c('fw:django', ['django'], ['django'], { kind: 'backend', domain: 'coding' }),
  c('fw:flask', ['flask'], ['flask'], { kind: 'backend', domain: 'coding' }),
  c('fw:rails', ['rails'], ['rails'], { kind: 'backend', domain: 'coding' }),
  c('fw:spring', ['spring boot'], ['spring boot'], { kind: 'backend', domain: 'coding' }),
  c('cloud:aws', ['aws', 'amazon web services'], ['aws', '亚马逊云'], { kind: 'cloud', domain: 'operations' }),
  c('cloud:gcp', ['gcp', 'google cloud'], ['gcp', '谷歌云'], { kind: 'cloud', domain: 'operations' }),
  c('cloud:azure', ['azure'], ['azure'], { kind: 'cloud', domain: 'operations' }),
  c('cloud:aliyun', ['alibaba cloud', 'aliyun'], ['阿里云'], { kind: 'cloud', domain: 'operations' }),
  c('mon:prometheus', ['prometheus'], ['prometheus'], { kind: 'monitoring', domain: 'operations' }),
  c('mon:grafana', ['grafana'], ['grafana'], { kind: 'monitoring', domain: 'operations' }),
  c('mon:datadog', ['datadog'], ['datadog'], { kind: 'monitoring', domain: 'operations' }),
  c('mon:newrelic', ['new relic', 'newrelic'], ['newrelic'], { kind: 'monitoring', domain: 'operations' }),
  c('ci:jenkins', ['jenkins'], ['jenkins'], { kind: 'ci', domain: 'operations' }),
  c('ci:github-actions', ['github actions'], ['github actions'], { kind: 'ci', domain: 'operations' }),
  c('ci:gitlab-ci', ['gitlab ci'], ['gitlab ci'], { kind: 'ci', domain: 'operations' }),
  c('os:linux', ['linux', 'ubuntu', 'debian'], ['linux'], { kind: 'os' }),
  c('os:windows', ['windows'], ['windows'], { kind: 'os' }),
  c('os:macos', ['macos', 'mac'], ['macos', '苹果电脑'], { kind: 'os' }),
  c('tr:flight', ['flight', 'flights', 'fly', 'plane', 'airline', 'airport'], ['飞机', '航班', '机票', '坐飞机'], {
    kind: 'transport',
    domain: 'travel',
  }),
  c('tr:train', ['train', 'rail'], ['火车', '高铁', '动车'], { kind: 'transport', domain: 'travel' }),
  c('tr:car', ['car', 'drive', 'driving', 'rental car'], ['自驾', '开车', '租车'], {
    kind: 'transport',
    domain: 'travel',
  }),
  c('tr:bus', ['bus', 'coach'], ['大巴', '巴士'], { kind: 'transport', domain: 'travel' }),

  // Work products and their parts, by domain.
  c('doc:guide', ['guide', 'tutorial', 'handbook', 'manual', 'howto'], ['指南', '教程', '手册', '攻略'], {
    domain: 'writing',
  }),
  c('doc:document', ['document', 'doc', 'docs', 'documentation', 'readme'], ['文档', '说明文档'], {
    domain: 'writing',
  }),
  c('doc:report', ['report'], ['报告', '报表', '周报', '月报', '日报', '年报'], { domain: 'writing' }),
  c('doc:summary', ['summary', 'overview', 'recap'], ['总结', '摘要', '概述', '小结'], { domain: 'writing' }),
  c('doc:article', ['article', 'post', 'blog'], ['文章', '博客', '推文'], { domain: 'writing' }),
  // Parts and qualities of any work product: no domain, so they never make a message foreign.
  c('doc:section', ['section', 'chapter'], ['章节', '一节', '部分', '小节']),
  c('doc:intro', ['introduction', 'intro'], ['引言', '开头', '简介']),
  c('doc:tone', ['tone', 'style', 'wording', 'voice'], ['语气', '风格', '措辞', '口吻']),
  c('doc:email', ['email', 'emails', 'newsletter', 'mail'], ['邮件', '电子邮件'], { domain: 'writing' }),
  c('doc:checklist', ['checklist', 'list'], ['清单', '列表'], {}),
  c('code:test', ['test', 'tests', 'unit test'], ['测试', '单元测试', '测试用例'], { domain: 'coding' }),
  c('code:code', ['code', 'script', 'function', 'module'], ['代码', '脚本', '函数', '模块'], { domain: 'coding' }),
  c('code:migration', ['migration', 'migrate', 'schema'], ['迁移', '表结构'], { domain: 'coding' }),
  c('code:database', ['database', 'db', 'table', 'index', 'query'], ['数据库', '数据表', '索引', '查询'], {
    domain: 'coding',
  }),
  c('code:api', ['api', 'endpoint', 'service'], ['接口', '服务'], { domain: 'coding' }),
  c('code:bug', ['bug', 'error', 'crash', 'leak', 'exception'], ['问题', '报错', '崩溃', '泄漏', '异常'], {
    domain: 'coding',
  }),
  c(
    'code:repo',
    ['repository', 'repo', 'commit', 'branch', 'pull request', 'pr', 'git'],
    ['仓库', '提交', '分支', 'git'],
    {
      domain: 'coding',
    },
  ),
  c(
    'ops:monitoring',
    ['monitoring', 'monitor', 'metrics', 'dashboard', 'latency'],
    ['监控', '指标', '看板', '仪表盘', '延迟'],
    {
      domain: 'operations',
    },
  ),
  c('ops:alert', ['alert', 'alerts', 'alerting', 'alarm', 'threshold'], ['告警', '报警', '阈值'], {
    domain: 'operations',
  }),
  c('ops:incident', ['incident', 'outage', 'postmortem', 'on-call', 'runbook'], ['故障', '事故', '复盘', '值班'], {
    domain: 'operations',
  }),
  c(
    'ops:deploy',
    ['deploy', 'deployment', 'release', 'rollback', 'server', 'production'],
    ['部署', '上线', '回滚', '服务器', '生产环境'],
    {
      domain: 'operations',
    },
  ),
  c('ops:memory', ['memory', 'heap', 'ram'], ['内存', '堆'], { domain: 'operations' }),
  c('data:data', ['data', 'dataset', 'records'], ['数据', '数据集', '记录'], { domain: 'data' }),
  c('data:analysis', ['analysis', 'analyse', 'analyze', 'statistics', 'trend', 'breakdown'], ['分析', '统计', '趋势'], {
    domain: 'data',
  }),
  c(
    'data:chart',
    ['chart', 'graph', 'plot', 'visualization', 'visualisation'],
    ['图表', '图', '折线图', '柱状图', '可视化'],
    {
      domain: 'data',
    },
  ),
  c('data:sales', ['sales', 'revenue', 'orders'], ['销售', '销量', '营收', '订单'], { domain: 'data' }),
  c('data:customer', ['customer', 'customers', 'client', 'user', 'users'], ['客户', '用户', '顾客'], {}),
  c('data:churn', ['churn', 'retention'], ['流失', '留存'], { domain: 'data' }),
  c('data:region', ['region', 'regions', 'country', 'city', 'store', 'stores'], ['地区', '区域', '城市', '门店'], {
    domain: 'data',
  }),
  c('data:missing', ['missing', 'null', 'blank'], ['缺失', '缺失值', '空值'], { domain: 'data' }),
  c(
    'travel:trip',
    ['trip', 'travel', 'vacation', 'holiday', 'tour', 'journey'],
    ['旅行', '旅游', '出行', '游', '行程', '度假'],
    {
      domain: 'travel',
    },
  ),
  c('travel:itinerary', ['itinerary', 'schedule', 'day'], ['行程', '日程', '安排', '第一天', '第二天', '第三天'], {
    domain: 'travel',
  }),
  c('travel:hotel', ['hotel', 'accommodation', 'hostel', 'stay', 'lodging'], ['酒店', '住宿', '民宿', '宾馆'], {
    domain: 'travel',
  }),
  c(
    'travel:sight',
    ['museum', 'zoo', 'park', 'beach', 'sightseeing', 'attraction'],
    ['博物馆', '动物园', '公园', '景点', '海滩'],
    {
      domain: 'travel',
    },
  ),
  c('travel:packing', ['packing', 'luggage'], ['行李', '物品'], { domain: 'travel' }),
  c(
    'food:meal',
    ['dinner', 'lunch', 'breakfast', 'meal', 'restaurant', 'food', 'tasting'],
    ['晚餐', '午餐', '早餐', '餐厅', '美食'],
    {
      domain: 'travel',
    },
  ),
  c(
    'edu:lesson',
    ['lesson', 'class', 'course', 'lecture', 'curriculum', 'syllabus'],
    ['课', '课程', '教案', '课堂', '讲课'],
    {
      domain: 'education',
    },
  ),
  c(
    'edu:exercise',
    ['exercise', 'exercises', 'homework', 'practice', 'problem'],
    ['练习', '练习题', '习题', '作业', '例题'],
    {
      domain: 'education',
    },
  ),
  c(
    'edu:quiz',
    ['quiz', 'exam', 'test paper', 'assessment'],
    ['测验', '考试', '试卷', '测试卷', '单元测试卷', '考核'],
    { domain: 'education' },
  ),
  c('edu:student', ['student', 'students', 'pupil', 'learner'], ['学生', '学员'], { domain: 'education' }),
  c(
    'fin:invest',
    ['invest', 'investment', 'portfolio', 'allocation', 'asset', 'assets', 'fund', 'funds'],
    ['投资', '理财', '配置', '资产', '基金'],
    {
      domain: 'finance',
    },
  ),
  c('fin:bond', ['bond', 'bonds', 'treasury', 'treasuries'], ['债券', '国债'], { domain: 'finance' }),
  // A goal that names a budget rules out luxury (a budget is a cap, whatever its size).
  c(
    'fin:budget',
    ['budget', 'cost', 'costs', 'money', 'price', 'spend', 'spending'],
    ['预算', '费用', '钱', '花费', '价格', '成本'],
    {
      violates: ['cost:luxury'],
    },
  ),
  c('mkt:campaign', ['campaign', 'launch', 'promotion', 'marketing'], ['活动', '推广', '营销', '发布会'], {
    domain: 'marketing',
  }),
  c('mkt:copy', ['copy', 'subject line', 'slogan', 'headline', 'tagline'], ['文案', '标题', '口号'], {
    domain: 'marketing',
  }),
  c('mkt:press', ['press release', 'announcement'], ['新闻稿', '公告'], { domain: 'marketing' }),
  c('cs:reply', ['reply', 'replies', 'response', 'responses', 'script', 'template'], ['回复', '话术', '模板'], {
    domain: 'support',
  }),
  c('cs:refund', ['refund', 'refunds'], ['退款', '退货', '换货', '退换货', '售后'], { domain: 'support' }),
  c('cs:ticket', ['ticket', 'complaint', 'support'], ['工单', '投诉', '客服'], { domain: 'support' }),

  // Constraint concepts and what they rule out.
  c(
    'con:vegetarian',
    ['vegetarian', 'vegan', 'plant-based', 'meatless'],
    ['素食', '吃素', '素菜', '纯素', '全素', '素宴'],
    {
      violates: ['food:meat'],
    },
  ),
  c(
    'food:meat',
    [
      'meat',
      'beef',
      'pork',
      'chicken',
      'lamb',
      'steak',
      'steakhouse',
      'bacon',
      'ham',
      'sausage',
      'burger',
      'barbecue',
      'bbq',
    ],
    ['肉', '牛肉', '猪肉', '鸡肉', '羊肉', '牛排', '红烧肉', '烤肉', '火锅', '香肠', '培根'],
  ),
  c(
    'con:low-risk',
    ['low-risk', 'conservative', 'safe', 'stable', 'capital preservation'],
    ['低风险', '稳健', '保守', '保本'],
    {
      violates: ['fin:high-risk'],
    },
  ),
  c(
    'fin:high-risk',
    [
      'crypto',
      'bitcoin',
      'cryptocurrency',
      'leverage',
      'leveraged',
      'options',
      'futures',
      'junk',
      'penny stocks',
      'high-risk',
      'speculative',
    ],
    ['比特币', '加密货币', '虚拟币', '杠杆', '期货', '期权', '高风险', '炒股', '垃圾债'],
  ),
  c(
    'con:anonymous',
    ['anonymised', 'anonymized', 'anonymous', 'de-identified', 'pseudonymised', 'pseudonymized'],
    ['匿名', '脱敏', '匿名化'],
    {
      violates: ['data:pii'],
    },
  ),
  c(
    'data:pii',
    [
      'names',
      'full names',
      'phone',
      'phone numbers',
      'email addresses',
      'addresses',
      'ssn',
      'social security',
      'passport',
      'pii',
    ],
    ['姓名', '手机号', '电话', '电话号码', '身份证', '住址', '家庭住址', '真实姓名'],
  ),
  c(
    'con:polite',
    ['polite', 'courteous', 'friendly', 'respectful', 'professional', 'empathetic'],
    ['礼貌', '客气', '友好', '专业', '耐心'],
    {
      violates: ['tone:rude'],
    },
  ),
  c(
    'tone:rude',
    ['rude', 'harsh', 'aggressive', 'sarcastic', 'blunt', 'insulting', 'snarky'],
    ['凶', '粗鲁', '不客气', '强硬', '讽刺', '骂'],
    {},
  ),
  c(
    'con:children',
    ['children', 'kids', 'child', 'family-friendly', 'kid-friendly'],
    ['儿童', '孩子', '亲子', '小朋友', '少儿', '小学生'],
    {
      violates: ['content:adult'],
    },
  ),
  c(
    'content:adult',
    ['horror', 'gore', 'violence', 'violent', 'alcohol', 'bar', 'nightclub', 'casino'],
    ['恐怖', '血腥', '暴力', '酒吧', '夜店', '赌场'],
    {},
  ),
  c('con:budget', ['cheap', 'affordable', 'low-cost', 'inexpensive'], ['便宜', '实惠', '以内', '省钱', '穷游'], {
    violates: ['cost:luxury'],
  }),
  c(
    'cost:luxury',
    ['luxury', 'five-star', '5-star', 'first class', 'first-class', 'business class', 'ritz', 'suite'],
    ['豪华', '五星', '五星级', '头等舱', '商务舱', '总统套房'],
    {},
  ),
  c('con:no-paid', ['organic', 'zero paid', 'no paid', 'unpaid'], ['零投放', '不投放', '免费推广'], {
    violates: ['mkt:paid'],
  }),
  c(
    'mkt:paid',
    ['ads', 'advertising', 'advert', 'adverts', 'sponsored', 'paid', 'ppc', 'adwords'],
    ['广告', '投放', '付费推广', '竞价'],
    {},
  ),
  c(
    'con:no-downtime',
    ['zero-downtime', 'without downtime', 'no downtime', 'zero downtime'],
    ['不停机', '零停机', '不停服'],
    {
      violates: ['ops:downtime'],
    },
  ),
  c(
    'ops:downtime',
    ['downtime', 'offline', 'take down', 'maintenance window', 'shut down'],
    ['停机', '停服', '下线'],
    {},
  ),
  c(
    'con:beginner',
    ['beginner', 'beginners', 'introductory', 'intro', 'novice', 'high-school', 'basic', 'newcomer'],
    ['入门', '初学者', '新手', '基础', '初中', '初二', '小学'],
    {
      violates: ['level:advanced'],
    },
  ),
  c(
    'level:advanced',
    ['advanced', 'expert', 'senior', 'graduate', 'phd', 'metaclasses'],
    ['高级', '进阶', '专家', '研究生', '博士'],
    {},
  ),
  c('con:read-only', ['read-only', 'readonly'], ['只读'], { violates: ['ops:write'] }),
  c('con:alcohol-free', ['alcohol-free', 'non-alcoholic', 'dry', 'sober'], ['无酒精', '不喝酒', '禁酒', '不含酒精'], {
    violates: ['drink:alcohol'],
  }),
  c(
    'drink:alcohol',
    ['beer', 'wine', 'cocktail', 'cocktails', 'open bar', 'brewery', 'whisky', 'vodka', 'champagne', 'liquor'],
    ['啤酒', '红酒', '白酒', '鸡尾酒', '喝酒', '酒水'],
  ),
  c('con:nut-free', ['nut-free', 'peanut-free', 'allergen-free'], ['无坚果', '不含坚果'], { violates: ['food:nuts'] }),
  c(
    'food:nuts',
    ['nut', 'nuts', 'peanut', 'peanuts', 'almond', 'almonds', 'walnut', 'walnuts', 'cashew', 'hazelnut', 'pistachio'],
    ['坚果', '花生', '杏仁', '核桃', '腰果', '榛子'],
  ),
  c('con:sugar-free', ['sugar-free', 'diabetic', 'diabetes', 'no-sugar'], ['无糖', '糖尿病', '控糖', '低糖'], {
    violates: ['food:sugar'],
  }),
  c(
    'food:sugar',
    ['sugar', 'cake', 'candy', 'dessert', 'soda', 'syrup', 'chocolate', 'cookies'],
    ['蛋糕', '甜点', '奶油', '巧克力', '糖果', '可乐', '白糖'],
  ),
  c('con:remote', ['remote', 'remotely', 'virtual'], ['远程', '线上'], { violates: ['mode:onsite'] }),
  c(
    'mode:onsite',
    ['in person', 'in-person', 'onsite', 'on-site', 'face-to-face', 'at the office'],
    ['线下', '面对面'],
    {},
  ),
  c('con:open-source', ['open-source', 'open source', 'oss'], ['开源'], { violates: ['sw:proprietary'] }),
  c(
    'sw:proprietary',
    ['proprietary', 'closed-source', 'enterprise edition', 'commercial license'],
    ['商业版', '闭源', '付费版'],
    {},
  ),
  c('con:original', ['original', 'originals'], ['原创'], { violates: ['content:cover'] }),
  c('content:cover', ['cover version', 'covers', 'plagiarise', 'plagiarize'], ['翻唱', '抄袭', '搬运'], {}),
  c('con:free-entry', ['free of charge', 'free admission', 'free entry', 'free to attend'], ['免费'], {
    violates: ['cost:fee'],
  }),
  c('cost:fee', ['fee', 'fees', 'entrance fee', 'admission fee', 'charge'], ['收费', '报名费', '入场费', '门票费'], {}),
  c('ops:write', ['delete', 'truncate', 'overwrite'], ['删除', '删掉', '覆盖', '清空'], {}),
];

/** Where a concept occurs in a token list: `[start, end)`. */
export interface ConceptHit {
  concept: Concept;
  start: number;
  end: number;
}

const HAN = /\p{Script=Han}/u;

interface Index {
  /** Latin phrases as token sequences (lowercase surface or lemma), by first word, longest first. */
  latin: Map<string, Array<{ words: string[]; concept: Concept }>>;
  /** Chinese words by first character, longest first. */
  han: Map<string, Array<{ word: string; concept: Concept }>>;
  /** One-character Chinese entries and every character that starts an entry, for the inside-a-token search. */
  hanAll: Array<{ word: string; concept: Concept }>;
  byId: Map<string, Concept>;
}

let index: Index | undefined;

function push<T>(map: Map<string, T[]>, key: string, value: T): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

function lexicon(): Index {
  if (index) return index;
  const latin: Index['latin'] = new Map();
  const han: Index['han'] = new Map();
  const hanAll: Index['hanAll'] = [];
  for (const concept of CONCEPTS) {
    for (const w of [...concept.en, ...concept.zh]) {
      if (HAN.test(w)) {
        push(han, w.charAt(0), { word: w, concept });
        hanAll.push({ word: w, concept });
      } else {
        const words = w.toLowerCase().split(/(?=-)|(?<=-)|\s+/u);
        push(latin, words[0] ?? '', { words, concept });
      }
    }
  }
  for (const list of latin.values()) list.sort((a, b) => b.words.length - a.words.length);
  for (const list of han.values()) list.sort((a, b) => b.word.length - a.word.length);
  hanAll.sort((a, b) => b.word.length - a.word.length);
  index = { latin, han, hanAll, byId: new Map(CONCEPTS.map((x) => [x.id, x])) };
  return index;
}

/**
 * Every concept mentioned in `tokens`. A Latin entry matches a run of tokens by surface form or
 * lemma ("emails" finds "email"); a Chinese entry matches inside one jieba token ("红烧肉" contains
 * "肉") or across consecutive ones ("低" + "风险"), because jieba's segmentation of compounds varies.
 */
export function conceptHits(tokens: readonly Token[]): ConceptHit[] {
  // The scorer asks several times about the same analysis.
  const cached = memo.get(tokens);
  if (cached) return cached;
  const { latin, han, hanAll } = lexicon();
  const hits: ConceptHit[] = [];
  const taken = new Set<number>();
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    if (!t || t.pos === 'punct') continue;
    if (t.script === 'han') {
      // The longest entry that starts in this token, inside it or across the next ones.
      let best: { word: string; concept: Concept; end: number } | undefined;
      for (const h of hanAll) {
        if (h.word.length > t.lower.length) continue;
        // A one-character entry only as a whole word: 游 in 亲子游 is travel, in 游戏 it is not.
        if (h.word.length > 1 ? t.lower.includes(h.word) : t.lower === h.word) {
          best = { ...h, end: i + 1 };
          break;
        }
      }
      let joined = t.lower;
      for (let j = i + 1; j < tokens.length && j < i + 4; j++) {
        joined += tokens[j]?.lower ?? '';
        for (const h of han.get(t.lower.charAt(0)) ?? []) {
          if (best && h.word.length <= best.word.length) break;
          if (joined.startsWith(h.word) && h.word.length > joined.length - (tokens[j]?.lower.length ?? 0)) {
            best = { ...h, end: j + 1 };
          }
        }
      }
      if (best) hits.push({ concept: best.concept, start: i, end: best.end });
      continue;
    }
    if (taken.has(i)) continue;
    const candidates = [...(latin.get(t.lower) ?? []), ...(t.lemma !== t.lower ? (latin.get(t.lemma) ?? []) : [])].sort(
      (a, b) => b.words.length - a.words.length,
    );
    const entry = candidates.find((e) =>
      e.words.every((w, k) => {
        const u = tokens[i + k];
        return u !== undefined && (u.lower === w || u.lemma === w);
      }),
    );
    if (entry) {
      hits.push({ concept: entry.concept, start: i, end: i + entry.words.length });
      for (let k = i; k < i + entry.words.length; k++) taken.add(k);
    }
  }
  memo.set(tokens, hits);
  return hits;
}

const memo = new WeakMap<readonly Token[], ConceptHit[]>();
