import { z } from "zod";
import type { Config } from "../../config.ts";
import { ProviderError, providerFetch } from "./retry.ts";

export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

export interface ChatModel {
  readonly name: string;
  complete(messages: ChatMessage[], options: { signal?: AbortSignal; maxTokens: number }): Promise<string>;
}

const MODEL_TIMEOUT_MS = 120_000;

/** The part of an OpenAI chat-completions answer that is read. */
const ChatCompletion = z.looseObject({
  choices: z
    .array(
      z.looseObject({
        message: z.looseObject({ content: z.string().nullable() }),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1),
});

/** Any OpenAI-compatible chat-completions endpoint: POST {base}/chat/completions. */
export function createChatModel(settings: NonNullable<Config["research"]["llm"]>): ChatModel {
  const provider = `model ${settings.model}`;
  return {
    name: settings.model,
    async complete(messages, { signal, maxTokens }) {
      const body = await providerFetch(provider, `${settings.baseUrl}/chat/completions`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(settings.apiKey ? { authorization: `Bearer ${settings.apiKey}` } : {}),
        },
        body: JSON.stringify({ model: settings.model, messages, temperature: 0.2, max_tokens: maxTokens }),
        timeoutMs: MODEL_TIMEOUT_MS,
        signal,
      });
      const parsed = ChatCompletion.safeParse(body);
      if (!parsed.success) throw new ProviderError(provider, "answered an unexpected shape", false);
      const content = parsed.data.choices[0]?.message.content?.trim();
      if (!content) throw new ProviderError(provider, "answered an empty message", true);
      return content;
    },
  };
}
