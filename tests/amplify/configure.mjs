// The configuration: what a page changes to point at `agentturn dev` instead of the deployed AppSync Events API.
// Deployed, it names the stack's HTTP endpoint and the Cognito user pool (Amplify then signs the user in and
// sends their token); locally, the dev server's endpoint and a token provider that hands any token (the dev
// server plays the authorizer, as it does for the HTTP API, and takes every connection as its dev user).
import { Amplify } from "aws-amplify";
import { decodeJWT } from "aws-amplify/auth";

const base64url = (value) => Buffer.from(JSON.stringify(value)).toString("base64url");

export function configure({ endpoint, subject, credentials }) {
  const token = decodeJWT(`${base64url({ alg: "none" })}.${base64url({ sub: subject })}.local`);
  Amplify.configure(
    {
      API: {
        Events: {
          endpoint, // agentturn dev: https://127.0.0.1:<events port>/event; deployed: the Event API's HTTP endpoint
          region: "us-east-1",
          defaultAuthMode: "userPool", // as deployed: the user's token subscribes
        },
      },
    },
    {
      Auth: {
        tokenProvider: { getTokens: async () => ({ accessToken: token, idToken: token }) },
        // Only IAM principals may publish (as deployed): a publish with authMode "iam" is signed with these.
        credentialsProvider: {
          getCredentialsAndIdentityId: async () => ({ credentials }),
          clearCredentialsAndIdentityId: () => {},
        },
      },
    },
  );
}
