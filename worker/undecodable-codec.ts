/**
 * The worker's outermost payload codec: it decodes each payload on its own (through the encryption
 * codec when there is one) and checks that the default payload converter can read the result. A
 * payload that fails either way is replaced by an undecodable marker (contract/undecodable.ts), a
 * JSON value the workflow's handlers refuse as a recorded rejection, instead of failing the workflow
 * task on every retry (which wedged the Session: later messages, updates and queries all failed).
 *
 * The check decodes JSON payloads a second time (the converter in the workflow sandbox reads them
 * again); that is the price of never handing the sandbox a payload it cannot read.
 *
 * What stays a hard failure: nothing here; a start input or carried state replaced by a marker fails
 * the workflow's own start validation, and activity results are the worker's own payloads.
 */
import { defaultPayloadConverter, type Payload, type PayloadCodec } from '@temporalio/common';
import { undecodableMarker } from '../contract/undecodable.js';

export class UndecodableMarkingCodec implements PayloadCodec {
  /** Payloads replaced by markers since the worker started (a figure for logs and tests). */
  replaced = 0;

  constructor(
    private readonly inner?: PayloadCodec,
    private readonly log: (line: string) => void = () => {},
  ) {}

  encode(payloads: Payload[]): Promise<Payload[]> {
    return this.inner ? this.inner.encode(payloads) : Promise.resolve(payloads);
  }

  decode(payloads: Payload[]): Promise<Payload[]> {
    return Promise.all(payloads.map((payload) => this.decodeOne(payload)));
  }

  private async decodeOne(payload: Payload): Promise<Payload> {
    let decoded: Payload | undefined;
    try {
      decoded = this.inner ? (await this.inner.decode([payload]))[0] : payload;
      if (!decoded) throw new Error('the codec returned no payload');
      defaultPayloadConverter.fromPayload(decoded);
      return decoded;
    } catch (err) {
      const bytes = payload.data?.length ?? 0;
      const reason = err instanceof Error ? err.message : String(err);
      this.replaced++;
      this.log(`payload codec: replaced an undecodable payload (${bytes} bytes): ${reason}`);
      return defaultPayloadConverter.toPayload(undecodableMarker(bytes, reason));
    }
  }
}
