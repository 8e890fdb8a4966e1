/**
 * Markdown to Word: marked's tokens mapped onto the docx library's document model. Covers what guides
 * use (headings, paragraphs with bold, italic, code and links, nested bullet and numbered lists,
 * code blocks, quotes, tables, rules); images and raw HTML are kept as their text.
 */
import {
  AlignmentType,
  Document,
  ExternalHyperlink,
  HeadingLevel,
  LevelFormat,
  Packer,
  Paragraph,
  Table,
  TableCell,
  TableRow,
  TextRun,
  WidthType,
  type ParagraphChild,
} from 'docx';
import { marked, type Token, type Tokens } from 'marked';

const HEADINGS = [
  HeadingLevel.HEADING_1,
  HeadingLevel.HEADING_2,
  HeadingLevel.HEADING_3,
  HeadingLevel.HEADING_4,
  HeadingLevel.HEADING_5,
  HeadingLevel.HEADING_6,
] as const;

const MONOSPACE = 'Courier New';

interface Style {
  bold?: boolean;
  italics?: boolean;
  strike?: boolean;
  code?: boolean;
}

/** What a conversion produced, for the tool's structured result. */
export interface DocxStats {
  headings: number;
  paragraphs: number;
  listItems: number;
  tables: number;
  codeBlocks: number;
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' };

/** marked leaves entities as written; Word wants the characters. */
function decode(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, name: string) => {
    if (name.startsWith('#x') || name.startsWith('#X')) return String.fromCodePoint(parseInt(name.slice(2), 16));
    if (name.startsWith('#')) return String.fromCodePoint(Number(name.slice(1)));
    return ENTITIES[name.toLowerCase()] ?? whole;
  });
}

function run(text: string, style: Style): TextRun {
  return new TextRun({
    text: decode(text),
    bold: style.bold,
    italics: style.italics,
    strike: style.strike,
    ...(style.code ? { font: MONOSPACE } : {}),
  });
}

function inline(tokens: Token[] | undefined, style: Style = {}): ParagraphChild[] {
  const out: ParagraphChild[] = [];
  for (const token of tokens ?? []) {
    switch (token.type) {
      case 'strong':
        out.push(...inline((token as Tokens.Strong).tokens, { ...style, bold: true }));
        break;
      case 'em':
        out.push(...inline((token as Tokens.Em).tokens, { ...style, italics: true }));
        break;
      case 'del':
        out.push(...inline((token as Tokens.Del).tokens, { ...style, strike: true }));
        break;
      case 'codespan':
        out.push(run((token as Tokens.Codespan).text, { ...style, code: true }));
        break;
      case 'br':
        out.push(new TextRun({ break: 1 }));
        break;
      case 'link': {
        const link = token as Tokens.Link;
        const children = inline(link.tokens, style).filter((c): c is TextRun => c instanceof TextRun);
        out.push(new ExternalHyperlink({ link: link.href, children }));
        break;
      }
      case 'image':
        out.push(run(`[image: ${(token as Tokens.Image).text || (token as Tokens.Image).href}]`, style));
        break;
      case 'text': {
        const text = token as Tokens.Text;
        out.push(...(text.tokens ? inline(text.tokens, style) : [run(text.text, style)]));
        break;
      }
      default:
        if ('text' in token && typeof token.text === 'string') out.push(run(token.text, style));
    }
  }
  return out;
}

class Builder {
  readonly blocks: Array<Paragraph | Table> = [];
  readonly stats: DocxStats = { headings: 0, paragraphs: 0, listItems: 0, tables: 0, codeBlocks: 0 };
  private lists = 0;

  add(tokens: Token[], indent = 0): void {
    for (const token of tokens) this.block(token, indent);
  }

  private block(token: Token, indent: number): void {
    switch (token.type) {
      case 'heading': {
        const heading = token as Tokens.Heading;
        this.stats.headings++;
        const level = HEADINGS[Math.min(heading.depth, 6) - 1] ?? HeadingLevel.HEADING_6;
        this.blocks.push(new Paragraph({ heading: level, children: inline(heading.tokens) }));
        break;
      }
      case 'paragraph':
        this.stats.paragraphs++;
        this.blocks.push(new Paragraph({ children: inline((token as Tokens.Paragraph).tokens) }));
        break;
      case 'text': // a tight list item's text
        this.blocks.push(new Paragraph({ children: inline([token]) }));
        break;
      case 'list':
        this.list(token as Tokens.List, indent);
        break;
      case 'code': {
        this.stats.codeBlocks++;
        const lines = (token as Tokens.Code).text.split('\n');
        const children = lines.map(
          (line, i) => new TextRun({ text: line, font: MONOSPACE, ...(i > 0 ? { break: 1 } : {}) }),
        );
        this.blocks.push(new Paragraph({ children }));
        break;
      }
      case 'blockquote':
        for (const inner of (token as Tokens.Blockquote).tokens) {
          const children = inline('tokens' in inner ? inner.tokens : [inner], { italics: true });
          this.blocks.push(new Paragraph({ children, indent: { left: 720 } }));
        }
        break;
      case 'table':
        this.table(token as Tokens.Table);
        break;
      case 'hr':
        this.blocks.push(new Paragraph({ thematicBreak: true, children: [] }));
        break;
      case 'html':
        this.blocks.push(new Paragraph({ children: [run((token as Tokens.HTML).text.trim(), {})] }));
        break;
      default: // space, def: nothing to show
    }
  }

  private list(list: Tokens.List, level: number): void {
    // Each numbered list gets its own instance, so numbering restarts at 1 per list.
    const instance = ++this.lists;
    for (const item of list.items) {
      this.stats.listItems++;
      const [first, ...rest] = item.tokens;
      const lead = first && (first.type === 'text' || first.type === 'paragraph') ? first : undefined;
      const children = lead ? inline((lead as Tokens.Text).tokens ?? [lead]) : [];
      if (item.task) children.unshift(new TextRun(item.checked ? '☑ ' : '☐ '));
      const depth = Math.min(level, 8);
      this.blocks.push(
        new Paragraph({
          children,
          ...(list.ordered
            ? { numbering: { reference: 'ordered', level: depth, instance } }
            : { bullet: { level: depth } }),
        }),
      );
      this.add(lead ? rest : item.tokens, level + 1);
    }
  }

  private table(table: Tokens.Table): void {
    this.stats.tables++;
    const alignment = (a: string | null) =>
      a === 'center' ? AlignmentType.CENTER : a === 'right' ? AlignmentType.RIGHT : AlignmentType.LEFT;
    const row = (cells: Tokens.TableCell[], header: boolean) =>
      new TableRow({
        tableHeader: header,
        children: cells.map(
          (cell, i) =>
            new TableCell({
              children: [
                new Paragraph({
                  alignment: alignment(table.align[i] ?? null),
                  children: inline(cell.tokens, header ? { bold: true } : {}),
                }),
              ],
            }),
        ),
      });
    this.blocks.push(
      new Table({
        width: { size: 100, type: WidthType.PERCENTAGE },
        rows: [row(table.header, true), ...table.rows.map((cells) => row(cells, false))],
      }),
    );
  }
}

/** The .docx bytes for `markdown`, and what it holds. */
export async function markdownToDocx(markdown: string, title?: string): Promise<{ docx: Buffer; stats: DocxStats }> {
  const builder = new Builder();
  builder.add(marked.lexer(markdown));
  const document = new Document({
    ...(title ? { title } : {}),
    numbering: {
      config: [
        {
          reference: 'ordered',
          levels: Array.from({ length: 9 }, (_, level) => ({
            level,
            format: LevelFormat.DECIMAL,
            text: `%${level + 1}.`,
            alignment: AlignmentType.START,
            style: { paragraph: { indent: { left: 720 * (level + 1), hanging: 360 } } },
          })),
        },
      ],
    },
    sections: [{ children: builder.blocks }],
  });
  return { docx: await Packer.toBuffer(document), stats: builder.stats };
}
