//! Every `ServerHandler` method but the three carriers, forwarded to the inner handler.
//!
//! Derived from rmcp's own forwarding impl for `Box<T>`/`Arc<T>`; the test
//! `rmcp_wrapper_forwards_every_method` fails when rmcp grows a method this
//! list lacks, because an unforwarded method would silently run rmcp's default.

/// Expands to the forwarding methods inside `impl ServerHandler for StateSealed<H>`.
macro_rules! forward_server_handler {
    () => {
        fn ping(
            &self,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
            self.inner.ping(context)
        }

        fn initialize(
            &self,
            request: InitializeRequestParams,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<InitializeResult, McpError>> + MaybeSendFuture + '_ {
            self.inner.initialize(request, context)
        }

        fn negotiate_initialize(
            &self,
            request: &InitializeRequestParams,
        ) -> Result<InitializeResult, McpError> {
            self.inner.negotiate_initialize(request)
        }

        fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
            self.inner.supported_protocol_versions()
        }

        fn discover(
            &self,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<DiscoverResult, McpError>> + MaybeSendFuture + '_ {
            self.inner.discover(context)
        }

        fn complete(
            &self,
            request: CompleteRequestParams,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<CompleteResult, McpError>> + MaybeSendFuture + '_ {
            self.inner.complete(request, context)
        }

        fn set_level(
            &self,
            request: SetLevelRequestParams,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
            self.inner.set_level(request, context)
        }


        fn list_prompts(
            &self,
            request: Option<PaginatedRequestParams>,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<ListPromptsResult, McpError>> + MaybeSendFuture + '_ {
            self.inner.list_prompts(request, context)
        }

        fn list_resources(
            &self,
            request: Option<PaginatedRequestParams>,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<ListResourcesResult, McpError>> + MaybeSendFuture + '_ {
            self.inner.list_resources(request, context)
        }

        fn list_resource_templates(
            &self,
            request: Option<PaginatedRequestParams>,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<ListResourceTemplatesResult, McpError>> + MaybeSendFuture + '_
        {
            self.inner.list_resource_templates(request, context)
        }


        fn accepted_subscription_filter(
            &self,
            requested: &SubscriptionFilter,
        ) -> Option<SubscriptionFilter> {
            self.inner.accepted_subscription_filter(requested)
        }

        fn listen(
            &self,
            context: SubscriptionContext,
        ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
            self.inner.listen(context)
        }

        fn subscribe(
            &self,
            request: SubscribeRequestParams,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
            self.inner.subscribe(request, context)
        }

        fn unsubscribe(
            &self,
            request: UnsubscribeRequestParams,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
            self.inner.unsubscribe(request, context)
        }


        fn list_tools(
            &self,
            request: Option<PaginatedRequestParams>,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<ListToolsResult, McpError>> + MaybeSendFuture + '_ {
            self.inner.list_tools(request, context)
        }

        fn get_tool(&self, name: &str) -> Option<Tool> {
            self.inner.get_tool(name)
        }

        fn on_custom_request(
            &self,
            request: CustomRequest,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<CustomResult, McpError>> + MaybeSendFuture + '_ {
            self.inner.on_custom_request(request, context)
        }

        fn on_cancelled(
            &self,
            notification: CancelledNotificationParam,
            context: NotificationContext<RoleServer>,
        ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
            self.inner.on_cancelled(notification, context)
        }

        fn on_progress(
            &self,
            notification: ProgressNotificationParam,
            context: NotificationContext<RoleServer>,
        ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
            self.inner.on_progress(notification, context)
        }

        fn on_initialized(
            &self,
            context: NotificationContext<RoleServer>,
        ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
            self.inner.on_initialized(context)
        }

        fn on_roots_list_changed(
            &self,
            context: NotificationContext<RoleServer>,
        ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
            self.inner.on_roots_list_changed(context)
        }

        fn on_custom_notification(
            &self,
            notification: CustomNotification,
            context: NotificationContext<RoleServer>,
        ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
            self.inner.on_custom_notification(notification, context)
        }

        fn get_info(&self) -> ServerConfig {
            self.inner.get_info()
        }

        fn get_task(
            &self,
            request: GetTaskParams,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<GetTaskResult, McpError>> + MaybeSendFuture + '_ {
            self.inner.get_task(request, context)
        }

        fn update_task(
            &self,
            request: UpdateTaskParams,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
            self.inner.update_task(request, context)
        }

        fn cancel_task(
            &self,
            request: CancelTaskParams,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
            self.inner.cancel_task(request, context)
        }

        fn list_skills(
            &self,
            request: Option<PaginatedRequestParams>,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<ListSkillsResult, McpError>> + MaybeSendFuture + '_
        {
            self.inner.list_skills(request, context)
        }

        fn get_skill(
            &self,
            request: GetSkillRequestParams,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<GetSkillResult, McpError>> + MaybeSendFuture + '_ {
            self.inner.get_skill(request, context)
        }

        fn read_resource_directory(
            &self,
            request: ReadResourceDirectoryRequestParams,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<ReadResourceDirectoryResult, McpError>>
        + MaybeSendFuture
        + '_ {
            self.inner.read_resource_directory(request, context)
        }
    };
}

pub(crate) use forward_server_handler;
