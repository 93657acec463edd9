// A page's code on AWS Amplify's AppSync Events client, as a team writes it for the deployed stack: follow a
// conversation's channel, publish to it. Nothing here knows about `agentturn dev`; only the configuration
// (configure.mjs) differs between the two.
import { events } from "aws-amplify/data";

/** Subscribes to `channel`; `onEvent` gets each event's JSON. Resolves once AppSync confirmed the subscription. */
export async function follow(channel, onEvent, onError) {
  const connection = await events.connect(channel);
  const subscription = connection.subscribe({ next: (message) => onEvent(message.event), error: onError });
  await subscription.ready;
  return { connection, subscription };
}

/** Publishes `event` on an open connection (`options.authMode` as Amplify takes it). */
export function publish(connection, event, options) {
  return connection.publish(event, options);
}
