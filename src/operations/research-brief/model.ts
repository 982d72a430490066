import { z } from "zod";
import { ProviderError, providerFetch } from "./retry.ts";
import type { ResearchSettings } from "./settings.ts";

export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

export interface ChatModel {
  readonly name: string;
  complete(messages: ChatMessage[], options: { signal?: AbortSignal; maxTokens: number }): Promise<string>;
}

const MODEL_TIMEOUT_MS = 120_000;
const TEMPERATURE = 0.2;
/**
 * Extra completion tokens for a reasoning model: max_completion_tokens counts the hidden reasoning
 * too (o3-mini spent 192 reasoning tokens on a one-sentence answer), so the answer's budget alone
 * would leave a long brief cut off or empty.
 */
export const REASONING_ALLOWANCE_TOKENS = 4096;

/** The part of an OpenAI chat-completions answer that is read. */
const ChatCompletion = z.looseObject({
  choices: z
    .array(
      z.looseObject({
        message: z.looseObject({ content: z.string().nullable(), refusal: z.string().nullish() }),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1),
});

/** An OpenAI-style error body: { error: { message, type, param, code } }. */
const ErrorAnswer = z.looseObject({
  error: z.looseObject({
    message: z.string().nullish(),
    param: z.string().nullish(),
    code: z.string().nullish(),
  }),
});

/**
 * How a server takes the answer's length and sampling: "classic" sends `max_tokens` and
 * `temperature` (every OpenAI-compatible server, and OpenAI's non-reasoning models); "reasoning"
 * sends `max_completion_tokens` and no temperature (OpenAI's reasoning models, gpt-5 and the
 * o-series, refuse the other form with a 400).
 */
type ParameterForm = "classic" | "reasoning";

/** What each model was found to accept, per process: base URL and model name → form. */
const acceptedForms = new Map<string, ParameterForm>();

/** Whether a 400 is the server refusing max_tokens or temperature (it names the parameter). */
export function refusesClassicParameters(error: unknown): boolean {
  if (!(error instanceof ProviderError) || error.answer?.status !== 400) return false;
  const parsed = ErrorAnswer.safeParse(error.answer.body);
  if (!parsed.success) return false;
  const { param, code, message } = parsed.data.error;
  if (param === "max_tokens" || param === "temperature") return true;
  return (
    /unsupported|not supported/i.test(`${code ?? ""} ${message ?? ""}`) &&
    /'?(?:max_tokens|temperature)'?/.test(message ?? "")
  );
}

/**
 * The answer without a reasoning model's thinking: `<think>…</think>` and `<thinking>…</thinking>`
 * blocks, a block left open at the start (the answer was cut off while thinking: nothing is left),
 * and leading thinking whose opening tag the server swallowed (text up to a first `</think>`).
 */
export function stripReasoning(content: string): string {
  let text = content.replace(/<(think|thinking)>[\s\S]*?<\/\1>/gi, "");
  text = text.replace(/^\s*<(think|thinking)>[\s\S]*$/i, "");
  const stray = /<\/(?:think|thinking)>/i.exec(text);
  if (stray) text = text.slice(stray.index + stray[0].length);
  return text.trim();
}

/** Any OpenAI-compatible chat-completions endpoint: POST {base}/chat/completions. */
export function createChatModel(settings: NonNullable<ResearchSettings["llm"]>): ChatModel {
  const provider = `model ${settings.model}`;
  const formKey = `${settings.baseUrl} ${settings.model}`;
  const request = (messages: ChatMessage[], form: ParameterForm, maxTokens: number, signal?: AbortSignal) =>
    providerFetch(provider, `${settings.baseUrl}/chat/completions`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...(settings.apiKey ? { authorization: `Bearer ${settings.apiKey}` } : {}),
      },
      body: JSON.stringify(
        form === "classic"
          ? { model: settings.model, messages, temperature: TEMPERATURE, max_tokens: maxTokens }
          : {
              model: settings.model,
              messages,
              max_completion_tokens: maxTokens + REASONING_ALLOWANCE_TOKENS,
            },
      ),
      timeoutMs: MODEL_TIMEOUT_MS,
      signal,
    });
  return {
    name: settings.model,
    async complete(messages, { signal, maxTokens }) {
      const form = acceptedForms.get(formKey) ?? "classic";
      let body: unknown;
      try {
        body = await request(messages, form, maxTokens, signal);
      } catch (error) {
        // Once, with the other form; from then on this model is asked in the form it accepted.
        if (form !== "classic" || !refusesClassicParameters(error)) throw error;
        body = await request(messages, "reasoning", maxTokens, signal);
        acceptedForms.set(formKey, "reasoning");
      }
      const parsed = ChatCompletion.safeParse(body);
      if (!parsed.success) throw new ProviderError(provider, "answered an unexpected shape", false);
      const message = parsed.data.choices[0]?.message;
      if (!message?.content && message?.refusal) {
        throw new ProviderError(provider, `refused to answer: ${message.refusal.slice(0, 200)}`, false);
      }
      const content = stripReasoning(message?.content ?? "");
      if (!content) throw new ProviderError(provider, "answered an empty message", true);
      return content;
    },
  };
}
