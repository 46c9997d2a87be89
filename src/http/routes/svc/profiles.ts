import { catalog } from "../../../errors/catalog.ts";
import type { Profile } from "../../../domain/enrollment.ts";
import { DEFAULT_PAGE_SIZE, totalPages } from "../../../enrollment/paging.ts";
import type { AppInstance } from "../../types.ts";
import { partBErrors } from "../../schemas/common.ts";
import {
  ProfileBody,
  ProfileList,
  ProfileListQuery,
  ProfileMutation,
  ProfileParams,
  ProfileStatus,
  ProfileView,
  StatusQuery,
} from "../../schemas/enrollment.ts";
import { emptyQueryMeansAbsent, clientActor, partBGuards, type PartBDeps } from "./guards.ts";

function view(p: Profile) {
  return {
    profileId: p.profileId,
    name: p.name,
    ...(p.description !== null ? { description: p.description } : {}),
    ...(p.mdmUrl !== null ? { mdmUrl: p.mdmUrl } : {}),
    ...(p.settings !== null ? { settings: p.settings } : {}),
    createdDate: p.createdAt,
    updatedDate: p.updatedAt,
  };
}

const tags = ["enrollment"];
const security = [{ apiToken: [] }];

/** Profiles (bulk enrollment) and the profile transaction status listing. */
export function registerProfileRoutes(app: AppInstance, deps: PartBDeps): void {
  const onRequest = partBGuards(deps);
  const profiles = deps.enrollment.profiles;
  const errors = partBErrors(400, 401, 403, 404, 409, 429, 500);
  const mutation = {
    bodyLimit: 64 * 1024,
    config: { invalidEntry: catalog.BULK_ENROLL_PROFILE_INVALID },
  };

  app.post(
    "/svc/v1/enroll/profiles",
    {
      onRequest,
      ...mutation,
      schema: { tags, security, operationId: "createProfile", summary: "Create a profile", body: ProfileBody, response: { 200: ProfileMutation, ...errors } },
    },
    async (request) => profiles.create(request.partB!.tenant.tenantId, request.body, clientActor(deps, request)),
  );

  app.get(
    "/svc/v1/enroll/profiles",
    {
      onRequest,
      preValidation: emptyQueryMeansAbsent,
      schema: { tags, security, operationId: "listProfiles", summary: "List profiles, newest first", querystring: ProfileListQuery, response: { 200: ProfileList, ...errors } },
    },
    async (request) => {
      const pageNum = request.query.pageNum ?? 0;
      const pageSize = request.query.pageSize ?? DEFAULT_PAGE_SIZE;
      const page = await profiles.list(request.partB!.tenant.tenantId, { pageNum, pageSize });
      return { totalCount: page.total, totalPage: totalPages(page.total, pageSize), pageNum, profiles: page.items.map(view) };
    },
  );

  // registered before /:profileId; find-my-way prefers the static segment either way
  app.get(
    "/svc/v1/enroll/profiles/status",
    {
      onRequest,
      preValidation: emptyQueryMeansAbsent,
      schema: {
        tags,
        security,
        operationId: "listProfileTransactions",
        summary: "Profile transactions, newest first",
        querystring: StatusQuery,
        response: { 200: ProfileStatus, ...errors },
      },
    },
    async (request) => {
      const q = request.query;
      const pageNum = q.pageNum ?? 0;
      const pageSize = q.pageSize ?? DEFAULT_PAGE_SIZE;
      const tenantId = request.partB!.tenant.tenantId;
      const page = await profiles.status(tenantId, {
        pageNum,
        pageSize,
        type: q.type || undefined,
        state: q.state || undefined,
        profileId: q.profileId || undefined,
      });
      return {
        profiles: {
          totalCount: page.total,
          totalPage: totalPages(page.total, pageSize),
          pageNum,
          transactions: page.items.map((t) => ({
            tenantId: t.tenantId,
            transactionId: t.transactionId,
            type: t.type,
            state: t.state,
            profileId: t.profileId,
            profileName: t.profileName,
          })),
        },
      };
    },
  );

  app.get(
    "/svc/v1/enroll/profiles/:profileId",
    {
      onRequest,
      schema: { tags, security, operationId: "getProfile", summary: "Read a profile", params: ProfileParams, response: { 200: ProfileView, ...errors } },
    },
    async (request) => view(await profiles.get(request.partB!.tenant.tenantId, request.params.profileId)),
  );

  app.put(
    "/svc/v1/enroll/profiles/:profileId",
    {
      onRequest,
      ...mutation,
      schema: {
        tags,
        security,
        operationId: "replaceProfile",
        summary: "Replace a profile",
        params: ProfileParams,
        body: ProfileBody,
        response: { 200: ProfileMutation, ...errors },
      },
    },
    async (request) => profiles.update(request.partB!.tenant.tenantId, request.params.profileId, request.body, clientActor(deps, request)),
  );

  app.delete(
    "/svc/v1/enroll/profiles/:profileId",
    {
      onRequest,
      schema: { tags, security, operationId: "deleteProfile", summary: "Delete a profile (its devices become unassigned)", params: ProfileParams, response: { 200: ProfileMutation, ...errors } },
    },
    async (request) => profiles.remove(request.partB!.tenant.tenantId, request.params.profileId, clientActor(deps, request)),
  );
}
